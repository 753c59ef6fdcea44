// The empty kernel of the launch-overhead benchmarks. Built by build.sh into empty.fatbin and loaded
// at run time with cudaLibraryLoadData, exactly like the library's own kernels.
extern "C" __global__ void empty_kernel() {}
