package org.cudagraph4j;

import java.nio.file.Path;

/**
 * The CUDA runtime this process loaded, from {@link Cuda#runtimeLibrary()}.
 *
 * @param file the {@code libcudart.so.13} file opened; for a runtime found by the dynamic loader,
 *     the file it mapped (on Linux), else the soname
 * @param foundBy the search step that found it: {@code -Dorg.cudagraph4j.cudart.path},
 *     {@code $CUDA_HOME}, {@code $CUDA_PATH}, {@code dynamic loader} or {@code default install}
 * @param version its version as {@code 1000 * major + 10 * minor}, e.g. 13000 for CUDA 13.0
 */
public record RuntimeLibrary(Path file, String foundBy, int version) {}
