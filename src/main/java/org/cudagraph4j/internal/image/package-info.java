/**
 * Checks GPU library images (ELF cubins, fatbins, PTX) before the driver sees them, and
 * decompresses the zstd and LZ4 entries of compressed fatbins, all in plain Java over the bytes
 * given. {@link org.cudagraph4j.internal.image.ImageValidator} is the entry point; the
 * decompressors serve it alone. The package calls no native code and depends on no other
 * package of the library, so every check runs, and is tested, without a GPU.
 *
 * <p>Not exported: the module's own packages call it, the API does not show it.
 */
package org.cudagraph4j.internal.image;
