// The same-process native baseline: the launch, capture and update loops of the JMH
// benchmarks, in C, built into a shared library that the JVM calls through FFM
// (org.cudagraph4j.benchmarks.SameProcess).
// Java and C then share one process, one CUDA context, one stream's worth of driver state and the
// same GPU clocks, and take turns round by round, so that drift between separate processes (10-30%
// on a shared machine) cannot enter their ratio.
//
// The kernel is loaded as the library loads it: cudaLibraryLoadData of the same empty.fatbin,
// cudaLibraryGetKernel, cudaLaunchKernel((const void*) kernel, ...). Host code only; built with
//   nvcc -O3 -shared -Xcompiler -fPIC -cudart shared -o libcg4j_same_process.so same_process.cu
#include <cuda_runtime.h>

#include <time.h>

#include <cstdint>
#include <vector>

namespace {
cudaLibrary_t g_library;
const void* g_empty;
cudaStream_t g_stream;
cudaGraphExec_t g_exec;
int g_exec_nodes = -1;
cudaGraph_t g_update_graph;
cudaGraphExec_t g_update_exec;
cudaGraphNode_t g_update_node;
int g_update_nodes = -1;

int64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Each call returns a cudaError_t, or the elapsed nanoseconds: negative values are errors.
int64_t fail(cudaError_t status) { return -int64_t(status); }

// Captures `n` launches of the empty kernel on g_stream into `graph`.
cudaError_t capture_chain(int n, cudaGraph_t* graph) {
    cudaError_t status = cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal);
    if (status != cudaSuccess) return status;
    for (int i = 0; i < n; ++i) {
        cudaLaunchKernel(g_empty, dim3(1), dim3(1), nullptr, 0, g_stream);
    }
    return cudaStreamEndCapture(g_stream, graph);
}
}  // namespace

// Loads the empty kernel from `image` (`bytes` long) and makes a non-blocking stream.
extern "C" int cg4j_same_process_init(const void* image, int64_t bytes) {
    (void)bytes;  // cudaLibraryLoadData takes none; the image is the harness's own empty.fatbin
    cudaError_t status = cudaLibraryLoadData(&g_library, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (status != cudaSuccess) return status;
    cudaKernel_t kernel;
    status = cudaLibraryGetKernel(&kernel, g_library, "empty_kernel");
    if (status != cudaSuccess) return status;
    g_empty = reinterpret_cast<const void*>(kernel);
    return cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking);
}

// `iterations` rounds of `n` launches of the empty kernel and a stream sync: the JMH benchmark
// LaunchOverhead.eager. Returns the nanoseconds taken.
extern "C" int64_t cg4j_same_process_eager(int n, int iterations) {
    int64_t start = now_ns();
    for (int it = 0; it < iterations; ++it) {
        for (int i = 0; i < n; ++i) {
            cudaError_t status = cudaLaunchKernel(g_empty, dim3(1), dim3(1), nullptr, 0, g_stream);
            if (status != cudaSuccess) return fail(status);
        }
        cudaError_t status = cudaStreamSynchronize(g_stream);
        if (status != cudaSuccess) return fail(status);
    }
    return now_ns() - start;
}

// `iterations` launches of an `n`-node graph of the empty kernel (captured on first use) and a
// stream sync: LaunchOverhead.graph. Returns the nanoseconds taken.
extern "C" int64_t cg4j_same_process_graph(int n, int iterations) {
    if (g_exec_nodes != n) {
        if (g_exec_nodes >= 0) cudaGraphExecDestroy(g_exec);
        cudaGraph_t graph;
        cudaError_t status = capture_chain(n, &graph);
        if (status != cudaSuccess) return fail(status);
        status = cudaGraphInstantiate(&g_exec, graph, 0);
        cudaGraphDestroy(graph);
        if (status != cudaSuccess) return fail(status);
        g_exec_nodes = n;
    }
    int64_t start = now_ns();
    for (int it = 0; it < iterations; ++it) {
        cudaError_t status = cudaGraphLaunch(g_exec, g_stream);
        if (status != cudaSuccess) return fail(status);
        status = cudaStreamSynchronize(g_stream);
        if (status != cudaSuccess) return fail(status);
    }
    return now_ns() - start;
}

// `iterations` captures of `n` launches of the empty kernel, each graph destroyed after:
// GraphLifecycle.capture.
extern "C" int64_t cg4j_same_process_capture(int n, int iterations) {
    int64_t start = now_ns();
    for (int it = 0; it < iterations; ++it) {
        cudaError_t status = cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal);
        if (status != cudaSuccess) return fail(status);
        for (int i = 0; i < n; ++i) {
            status = cudaLaunchKernel(g_empty, dim3(1), dim3(1), nullptr, 0, g_stream);
            if (status != cudaSuccess) {
                cudaGraph_t partial;
                cudaStreamEndCapture(g_stream, &partial);
                if (partial) cudaGraphDestroy(partial);
                return fail(status);
            }
        }
        cudaGraph_t graph;
        status = cudaStreamEndCapture(g_stream, &graph);
        if (status != cudaSuccess) return fail(status);
        status = cudaGraphDestroy(graph);
        if (status != cudaSuccess) return fail(status);
    }
    return now_ns() - start;
}

// `iterations` single-node updates of the middle node of an `n`-node executable chain (made on
// first use), its grid alternating between 2 and 1 blocks: GraphLifecycle.updateNode.
extern "C" int64_t cg4j_same_process_update_node(int n, int iterations) {
    if (g_update_nodes != n) {
        if (g_update_nodes >= 0) {
            cudaGraphExecDestroy(g_update_exec);
            cudaGraphDestroy(g_update_graph);
            g_update_nodes = -1;
        }
        cudaError_t status = capture_chain(n, &g_update_graph);
        if (status != cudaSuccess) return fail(status);
        std::vector<cudaGraphNode_t> nodes(n);
        size_t count = n;
        status = cudaGraphGetNodes(g_update_graph, nodes.data(), &count);
        if (status == cudaSuccess) status = cudaGraphInstantiate(&g_update_exec, g_update_graph, 0);
        if (status != cudaSuccess) {
            cudaGraphDestroy(g_update_graph);
            return fail(status);
        }
        g_update_node = nodes[count / 2];
        g_update_nodes = n;
    }
    // The library's form: the cudaKernel_t as the function, and no arguments.
    cudaKernelNodeParams params{};
    params.func = const_cast<void*>(g_empty);
    params.blockDim = dim3(1);
    int64_t start = now_ns();
    for (int it = 0; it < iterations; ++it) {
        params.gridDim = dim3(it % 2 == 0 ? 2 : 1);
        cudaError_t status = cudaGraphExecKernelNodeSetParams(g_update_exec, g_update_node, &params);
        if (status != cudaSuccess) return fail(status);
    }
    return now_ns() - start;
}

extern "C" void cg4j_same_process_close() {
    if (g_exec_nodes >= 0) cudaGraphExecDestroy(g_exec);
    g_exec_nodes = -1;
    if (g_update_nodes >= 0) {
        cudaGraphExecDestroy(g_update_exec);
        cudaGraphDestroy(g_update_graph);
    }
    g_update_nodes = -1;
    cudaStreamDestroy(g_stream);
    cudaLibraryUnload(g_library);
}
