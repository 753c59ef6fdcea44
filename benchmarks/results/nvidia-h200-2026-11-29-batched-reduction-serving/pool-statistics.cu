// Which frees does cudaMemPoolAttrUsedMemCurrent see, and when?
#include <cuda_runtime.h>
#include <cstdio>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("FAIL %s: %s\n", #x, cudaGetErrorName(e)); return 1; } } while (0)
static unsigned long long used(cudaMemPool_t p) { unsigned long long v = 0; cudaMemPoolGetAttribute(p, cudaMemPoolAttrUsedMemCurrent, &v); return v; }
static unsigned long long reserved(cudaMemPool_t p) { unsigned long long v = 0; cudaMemPoolGetAttribute(p, cudaMemPoolAttrReservedMemCurrent, &v); return v; }
int main() {
  cudaMemPool_t pool; cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned; props.location.type = cudaMemLocationTypeDevice; props.location.id = 0;
  CK(cudaMemPoolCreate(&pool, &props));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *p;
  // A: cudaFreeAsync, then read at once, then after stream sync.
  CK(cudaMallocFromPoolAsync(&p, 1 << 20, pool, s)); CK(cudaMemsetAsync(p, 1, 1 << 20, s));
  printf("A allocated: used %llu\n", used(pool));
  CK(cudaFreeAsync(p, s)); printf("A freeAsync, no sync: used %llu\n", used(pool));
  CK(cudaStreamSynchronize(s)); printf("A after stream sync: used %llu reserved %llu\n", used(pool), reserved(pool));
  // B: cudaFree (synchronous) on pool memory, after a device sync.
  CK(cudaMallocFromPoolAsync(&p, 1 << 20, pool, s)); CK(cudaMemsetAsync(p, 1, 1 << 20, s));
  CK(cudaDeviceSynchronize()); printf("B allocated: used %llu\n", used(pool));
  CK(cudaFree(p)); printf("B cudaFree: used %llu\n", used(pool));
  CK(cudaDeviceSynchronize()); printf("B after device sync: used %llu\n", used(pool));
  CK(cudaMallocFromPoolAsync(&p, 4096, pool, s)); CK(cudaFreeAsync(p, s)); CK(cudaStreamSynchronize(s));
  printf("B after another alloc/free on the pool: used %llu\n", used(pool));
  // C: cudaFreeAsync on a stream that is then destroyed.
  cudaStream_t t; CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
  CK(cudaMallocFromPoolAsync(&p, 1 << 20, pool, t)); CK(cudaMemsetAsync(p, 1, 1 << 20, t));
  CK(cudaFreeAsync(p, t)); CK(cudaStreamDestroy(t));
  CK(cudaDeviceSynchronize()); printf("C freeAsync then stream destroyed, device sync: used %llu\n", used(pool));
  // D: after a device sync, cudaFreeAsync on the allocating stream.
  CK(cudaMallocFromPoolAsync(&p, 1 << 20, pool, s)); CK(cudaDeviceSynchronize());
  CK(cudaFreeAsync(p, s)); printf("D freeAsync after device sync, no sync: used %llu\n", used(pool));
  CK(cudaStreamSynchronize(s)); printf("D after stream sync: used %llu\n", used(pool));
  CK(cudaMemPoolDestroy(pool));
  printf("done\n");
  return 0;
}
