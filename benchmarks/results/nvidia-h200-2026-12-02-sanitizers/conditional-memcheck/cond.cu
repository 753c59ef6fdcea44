// Conditional-node shapes of ConditionalNodeTest in plain CUDA C, looped, for memcheck.
// usage: cond ITERATIONS [churn]   (churn: a second thread cudaMalloc/cudaFree's 64 bytes in a loop)
#include <cuda_runtime.h>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#define CK(x) do { cudaError_t st_ = (x); if (st_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(st_)); exit(1); } } while (0)
constexpr int N = 4099;
__global__ void saxpy(int n, float a, const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
__global__ void set_if_greater(cudaGraphConditionalHandle h, const float* v, float t) { if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, v[0] > t ? 1 : 0); }
__global__ void set_cond(cudaGraphConditionalHandle h, const int* v) { if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, *v); }
__global__ void write_pattern(float* out, int n, float scale, float offset) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = i * scale + offset; }

static cudaGraphNode_t kernel(cudaGraph_t g, const cudaGraphNode_t* dep, int ndep, void* f, void** args) {
    cudaKernelNodeParams p = {}; p.func = f; p.gridDim = dim3(17); p.blockDim = dim3(256); p.kernelParams = args;
    cudaGraphNode_t n; CK(cudaGraphAddKernelNode(&n, g, dep, ndep, &p)); return n;
}
static cudaGraph_t conditional(cudaGraph_t g, cudaGraphNode_t dep, cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type, int size, cudaGraph_t* bodies) {
    cudaGraphNodeParams p = {}; p.type = cudaGraphNodeTypeConditional; p.conditional.handle = h; p.conditional.type = type; p.conditional.size = size;
    cudaGraphNode_t n; CK(cudaGraphAddNode(&n, g, &dep, nullptr, 1, &p));
    for (int i = 0; i < size; i++) bodies[i] = p.conditional.phGraph_out[i];
    return bodies[0];
}
static int whileLoop(cudaStream_t s, float start) {
    float* value; CK(cudaMalloc(&value, N * 4));
    std::vector<float> h(N, start); CK(cudaMemcpy(value, h.data(), N * 4, cudaMemcpyHostToDevice));
    float threshold = 0.37f, a = -0.5f; int n = N;
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle c; CK(cudaGraphConditionalHandleCreate(&c, g, 0, cudaGraphCondAssignDefault));
    void* setArgs[] = {&c, &value, &threshold};
    cudaGraphNode_t root = kernel(g, nullptr, 0, (void*) set_if_greater, setArgs);
    cudaGraph_t body; conditional(g, root, c, cudaGraphCondTypeWhile, 1, &body);
    void* axArgs[] = {&n, &a, &value, &value};
    cudaGraphNode_t halve = kernel(body, nullptr, 0, (void*) saxpy, axArgs);
    kernel(body, &halve, 1, (void*) set_if_greater, setArgs);
    cudaGraphExec_t e; CK(cudaGraphInstantiate(&e, g, 0));
    CK(cudaGraphLaunch(e, s)); CK(cudaStreamSynchronize(s));
    float host = start; while (host > threshold) host = -0.5f * host + host;
    CK(cudaMemcpy(h.data(), value, N * 4, cudaMemcpyDeviceToHost));
    int bad = 0; for (int i = 0; i < N; i++) bad += h[i] != host;
    CK(cudaGraphExecDestroy(e)); CK(cudaGraphDestroy(g)); CK(cudaFree(value));
    return bad;
}
static int nested(cudaStream_t s) {
    int one = 1; int *flag, *index; float *out, *scratch;
    CK(cudaMalloc(&flag, 4)); CK(cudaMalloc(&index, 4)); CK(cudaMalloc(&out, N * 4)); CK(cudaMalloc(&scratch, N * 4));
    CK(cudaMemcpy(flag, &one, 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(index, &one, 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(scratch, 0xFF, N * 4));
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle outer; CK(cudaGraphConditionalHandleCreate(&outer, g, 0, cudaGraphCondAssignDefault));
    void* setOuter[] = {&outer, &flag};
    cudaGraphNode_t root = kernel(g, nullptr, 0, (void*) set_cond, setOuter);
    cudaGraph_t body; conditional(g, root, outer, cudaGraphCondTypeIf, 1, &body);
    cudaGraphConditionalHandle inner; CK(cudaGraphConditionalHandleCreate(&inner, body, 0, cudaGraphCondAssignDefault));
    void* setInner[] = {&inner, &index};
    cudaGraphNode_t set = kernel(body, nullptr, 0, (void*) set_cond, setInner);
    cudaGraph_t cases[2]; conditional(body, set, inner, cudaGraphCondTypeSwitch, 2, cases);
    int n = N; float scale = 3, offset = -2;
    void* wpArgs[] = {&scratch, &n, &scale, &offset};
    cudaGraphNode_t write = kernel(cases[1], nullptr, 0, (void*) write_pattern, wpArgs);
    cudaGraphNode_t copy; CK(cudaGraphAddMemcpyNode1D(&copy, cases[1], &write, 1, out, scratch, N * 4, cudaMemcpyDeviceToDevice));
    cudaGraphExec_t e; CK(cudaGraphInstantiate(&e, g, 0));
    CK(cudaGraphDestroy(g));
    CK(cudaMemset(out, 0xFF, N * 4));
    CK(cudaGraphLaunch(e, s)); CK(cudaStreamSynchronize(s));
    std::vector<float> h(N); CK(cudaMemcpy(h.data(), out, N * 4, cudaMemcpyDeviceToHost));
    int bad = 0; for (int i = 0; i < N; i++) bad += h[i] != i * 3.0f - 2.0f;
    CK(cudaGraphExecDestroy(e));
    CK(cudaFree(flag)); CK(cudaFree(index)); CK(cudaFree(out)); CK(cudaFree(scratch));
    return bad;
}
int main(int argc, char** argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    bool churn = argc > 2;
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::atomic<bool> stop{false};
    std::thread churner([&] {
        if (!churn) return;
        CK(cudaSetDevice(0));
        while (!stop) { void* p; CK(cudaMalloc(&p, 64)); CK(cudaFree(p)); }
    });
    int bad = 0;
    for (int i = 0; i < iterations; i++) {
        bad += whileLoop(s, 1000.0f + i);
        bad += nested(s);
        // other sizes in between, as other tests allocate
        void* p; CK(cudaMalloc(&p, 1 + (i * 7919) % 70000)); CK(cudaFree(p));
    }
    stop = true; churner.join();
    printf("cond: %d iterations%s, %d wrong values\n", iterations, churn ? " with churn" : "", bad);
    return bad != 0;
}
