/**
 * cudagraph4j: the CUDA runtime and CUDA Graphs through the Foreign Function and Memory API.
 *
 * <p>Run with {@code --enable-native-access=org.cudagraph4j} (or {@code ALL-UNNAMED} on the class
 * path): the module opens {@code libcudart.so.13} and calls it directly.
 */
module org.cudagraph4j {
    exports org.cudagraph4j;
    exports org.cudagraph4j.graph;
    exports org.cudagraph4j.kernels;
}
