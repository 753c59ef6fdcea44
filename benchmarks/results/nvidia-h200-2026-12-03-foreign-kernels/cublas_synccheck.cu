// cuBLAS alone, as ForeignKernelGpuTest calls it, with no Java and no cudagraph4j: y = x·Wᵀ for
// x [batch, 512] and W [640, 512], row-major, through cublasSgemm with a workspace of its own, then
// a bias+ReLU kernel: eagerly, as a captured graph, and (with "if") that graph as a child graph in
// the body of an IF node whose condition is always 1, beside a second executable whose IF is
// always 0, as the Java test builds them. Under compute-sanitizer's synccheck it shows where
// barrier reports in cuBLAS's kernels come from.
//   nvcc -o cublas_synccheck cublas_synccheck.cu -lcublas
//   compute-sanitizer --tool synccheck ./cublas_synccheck 128
//   compute-sanitizer --tool synccheck ./cublas_synccheck 128 if
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>

__global__ void bias_relu(int m, int n, float* y, const float* bias) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m * n) y[i] = fmaxf(y[i] + bias[i % n], 0.f);
}

#define CHECK(call) do { int s_ = (int) (call); if (s_ != 0) { \
    std::fprintf(stderr, "%s: status %d\n", #call, s_); std::exit(1); } } while (0)

int main(int argc, char** argv) {
    int batch = argc > 1 ? std::atoi(argv[1]) : 128, in = 512, out = 640;
    std::vector<float> x((size_t) batch * in), w((size_t) out * in);
    for (auto& v : x) v = std::rand() / (float) RAND_MAX * 2 - 1;
    for (auto& v : w) v = std::rand() / (float) RAND_MAX * 2 - 1;
    std::vector<float> bias(out);
    for (auto& v : bias) v = std::rand() / (float) RAND_MAX * 2 - 1;
    float *dx, *dw, *dy, *dbias;
    void* workspace;
    CHECK(cudaMalloc(&dx, x.size() * 4));
    CHECK(cudaMalloc(&dw, w.size() * 4));
    CHECK(cudaMalloc(&dy, (size_t) batch * out * 4));
    CHECK(cudaMalloc(&workspace, 32 << 20));
    CHECK(cudaMalloc(&dbias, out * 4));
    CHECK(cudaMemcpy(dbias, bias.data(), out * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t handle;
    CHECK(cublasCreate(&handle));
    CHECK(cublasSetStream(handle, stream));
    CHECK(cublasSetWorkspace(handle, workspace, 32 << 20));
    float one = 1, zero = 0;
    CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, &one, dw, in, dx, in, &zero, dy, out));
    CHECK(cudaStreamSynchronize(stream));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, &one, dw, in, dx, in, &zero, dy, out));
    bias_relu<<<(batch * out + 255) / 256, 256, 0, stream>>>(batch, out, dy, dbias);
    CHECK(cudaStreamEndCapture(stream, &graph));
    bool inIfBody = argc > 2 && std::string(argv[2]) == "if";
    cudaGraph_t launched = graph;
    if (inIfBody) {
        CHECK(cudaGraphCreate(&launched, 0));
        cudaGraphConditionalHandle condition;
        CHECK(cudaGraphConditionalHandleCreate(&condition, launched, 1, cudaGraphCondAssignDefault));
        cudaGraphNodeParams params = {};
        params.type = cudaGraphNodeTypeConditional;
        params.conditional.handle = condition;
        params.conditional.type = cudaGraphCondTypeIf;
        params.conditional.size = 1;
        cudaGraphNode_t node, child;
        CHECK(cudaGraphAddNode(&node, launched, nullptr, nullptr, 0, &params));
        CHECK(cudaGraphAddChildGraphNode(&child, params.conditional.phGraph_out[0], nullptr, 0, graph));
        cudaGraph_t skipped;
        cudaGraphExec_t skippedExec;
        CHECK(cudaGraphCreate(&skipped, 0));
        cudaGraphConditionalHandle never;
        CHECK(cudaGraphConditionalHandleCreate(&never, skipped, 0, cudaGraphCondAssignDefault));
        cudaGraphNodeParams skippedParams = {};
        skippedParams.type = cudaGraphNodeTypeConditional;
        skippedParams.conditional.handle = never;
        skippedParams.conditional.type = cudaGraphCondTypeIf;
        skippedParams.conditional.size = 1;
        CHECK(cudaGraphAddNode(&node, skipped, nullptr, nullptr, 0, &skippedParams));
        CHECK(cudaGraphAddChildGraphNode(&child, skippedParams.conditional.phGraph_out[0], nullptr, 0, graph));
        CHECK(cudaGraphInstantiate(&skippedExec, skipped, 0));
        CHECK(cudaGraphLaunch(skippedExec, stream));
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaGraphExecDestroy(skippedExec));
        CHECK(cudaGraphDestroy(skipped));
    }
    CHECK(cudaMemset(dy, 0xFF, (size_t) batch * out * 4)); // NaN: every element must be written
    CHECK(cudaGraphInstantiate(&exec, launched, 0));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> y((size_t) batch * out);
    CHECK(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost));
    double error = 0, norm = 0;
    for (int r = 0; r < batch; r++)
        for (int c = 0; c < out; c++) {
            double ref = bias[c];
            for (int k = 0; k < in; k++) ref += (double) x[(size_t) r * in + k] * w[(size_t) c * in + k];
            ref = std::max(ref, 0.0);
            double d = y[(size_t) r * out + c] - ref;
            error += d * d;
            norm += ref * ref;
        }
    std::printf("batch %d%s: relative error %.3g\n", batch, inIfBody ? " in an IF body" : "", std::sqrt(error / norm));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    if (inIfBody) CHECK(cudaGraphDestroy(launched));
    CHECK(cublasDestroy(handle));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
