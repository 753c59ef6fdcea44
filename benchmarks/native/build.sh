#!/usr/bin/env bash
# Builds the native launch-overhead harness into benchmarks/native/build/:
#   empty.fatbin     the empty kernel (empty.cu), loaded at run time with cudaLibraryLoadData
#   launch_overhead  the harness; host code only, linked against the shared CUDA runtime
#                    (libcudart.so, the same library the Java side calls), nothing else
# NVCC or CUDA_HOME pick the compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc).
# ARCHS (space-separated compute capabilities) picks the empty fatbin's targets.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -z "${NVCC:-}" ]]; then
  if [[ -n "${CUDA_HOME:-}" ]]; then NVCC="$CUDA_HOME/bin/nvcc"
  elif command -v nvcc >/dev/null 2>&1; then NVCC="$(command -v nvcc)"
  else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
ARCHS="${ARCHS:-80 86 89 90 100 120}"
OUT="$HERE/build"
mkdir -p "$OUT"

gencode=()
last=""
for a in $ARCHS; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); last=$a; done
gencode+=(-gencode "arch=compute_$last,code=compute_$last")  # PTX for newer GPUs

# Uncompressed: the library checks every image before the driver sees it and refuses compressed
# fatbin entries, which it cannot check.
"$NVCC" -fatbin -O3 --no-compress "${gencode[@]}" -o "$OUT/empty.fatbin" "$HERE/empty.cu"
"$NVCC" -O3 -std=c++17 -arch=native -cudart shared -Xcompiler -Wall,-Wextra \
  -o "$OUT/launch_overhead" "$HERE/launch_overhead.cu"
echo "build.sh: built $OUT/launch_overhead and $OUT/empty.fatbin ($("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
