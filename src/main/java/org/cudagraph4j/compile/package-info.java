/**
 * Run-time compilation of CUDA C++ through NVRTC: {@link org.cudagraph4j.compile.Program} (source,
 * headers as text, name expressions for templates), {@link org.cudagraph4j.compile.ProgramOptions}
 * (architecture, dialect, macros, include paths, fast math, line info) and the
 * {@link org.cudagraph4j.compile.CompiledProgram} they give, PTX or a cubin that loads as a
 * {@link org.cudagraph4j.CudaLibrary}.
 *
 * <p>NVRTC ({@code libnvrtc.so.13}) is optional: it is opened on the first compilation, and the
 * rest of the library never needs it. Compiling needs no GPU once an architecture is named.
 */
package org.cudagraph4j.compile;
