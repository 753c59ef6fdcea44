// What a 10- and 100-node capture of the empty kernel costs in C, plain and with each call the
// library adds or passes differently: one cudaStreamGetCaptureInfo before the end (the query that
// ends a run), a non-null kernelParams for a kernel of no parameters, and cudaStreamIsCapturing.
// The variants take turns over 21 rounds; the median and quartiles per capture are printed
// (capture-calls.log), then the query's own cost in the middle of a 10-node capture.
//   nvcc -std=c++17 -O3 -o capture_calls capture-calls.cu
//   ./capture_calls benchmarks/src/main/resources/org/cudagraph4j/benchmarks/empty.fatbin
#include <cuda_runtime.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t error_ = (call);                                                      \
        if (error_ != cudaSuccess) {                                                      \
            std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(error_));   \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

namespace {
enum Variant { kPlain, kWithQuery, kNonNullParams, kWithIsCapturing, kVariants };
const char* const kNames[] = {"plain", "+GetCaptureInfo", "kernelParams non-null", "+IsCapturing"};

const void* g_empty;
cudaStream_t g_stream;
void* g_no_arguments[1];

int64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

void query_capture() {
    cudaStreamCaptureStatus status;
    unsigned long long id;
    cudaGraph_t graph;
    const cudaGraphNode_t* dependencies;
    const cudaGraphEdgeData* edges;
    size_t count;
    CHECK(cudaStreamGetCaptureInfo(g_stream, &status, &id, &graph, &dependencies, &edges, &count));
}

// Nanoseconds for `reps` captures of `n` launches, each graph destroyed after.
int64_t capture(int n, int reps, Variant variant) {
    int64_t start = now_ns();
    for (int r = 0; r < reps; ++r) {
        CHECK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
        void** params = variant == kNonNullParams ? g_no_arguments : nullptr;
        for (int i = 0; i < n; ++i) {
            CHECK(cudaLaunchKernel(g_empty, dim3(1), dim3(1), params, 0, g_stream));
        }
        if (variant == kWithQuery) query_capture();
        if (variant == kWithIsCapturing) {
            cudaStreamCaptureStatus status;
            CHECK(cudaStreamIsCapturing(g_stream, &status));
        }
        cudaGraph_t graph;
        CHECK(cudaStreamEndCapture(g_stream, &graph));
        CHECK(cudaGraphDestroy(graph));
    }
    return now_ns() - start;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::printf("usage: capture_calls EMPTY_FATBIN\n");
        return 2;
    }
    FILE* file = std::fopen(argv[1], "rb");
    if (file == nullptr) {
        std::printf("cannot open %s\n", argv[1]);
        return 2;
    }
    std::fseek(file, 0, SEEK_END);
    long length = std::ftell(file);
    std::fseek(file, 0, SEEK_SET);
    std::vector<char> image(length + 1);
    if (std::fread(image.data(), 1, length, file) != size_t(length)) {
        std::printf("short read of %s\n", argv[1]);
        return 2;
    }
    std::fclose(file);
    cudaLibrary_t library;
    CHECK(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    cudaKernel_t kernel;
    CHECK(cudaLibraryGetKernel(&kernel, library, "empty_kernel"));
    g_empty = reinterpret_cast<const void*>(kernel);
    CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));

    for (int n : {10, 100}) {
        int reps = 200000 / n;
        for (int v = 0; v < kVariants; ++v) capture(n, reps / 4, Variant(v));  // warm-up
        std::vector<double> micros[kVariants];
        for (int round = 0; round < 21; ++round) {
            for (int k = 0; k < kVariants; ++k) {
                Variant v = Variant((k + round) % kVariants);  // which goes first rotates
                micros[v].push_back(capture(n, reps, v) / 1e3 / reps);
            }
        }
        for (int v = 0; v < kVariants; ++v) {
            std::sort(micros[v].begin(), micros[v].end());
            std::printf("n=%4d %-24s median %.3f us  p25 %.3f p75 %.3f\n", n, kNames[v], micros[v][10],
                        micros[v][5], micros[v][15]);
        }
    }

    CHECK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 10; ++i) CHECK(cudaLaunchKernel(g_empty, dim3(1), dim3(1), nullptr, 0, g_stream));
    int64_t start = now_ns();
    for (int i = 0; i < 100000; ++i) query_capture();
    std::printf("GetCaptureInfo alone mid-capture: %.3f us\n", (now_ns() - start) / 1e3 / 100000);
    cudaGraph_t graph;
    CHECK(cudaStreamEndCapture(g_stream, &graph));
    CHECK(cudaGraphDestroy(graph));
    return 0;
}
