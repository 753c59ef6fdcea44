#!/usr/bin/env bash
# Builds the gpu tests' kernels into one fatbin: SASS for sm_80..sm_120 plus PTX for newer GPUs.
# Uncompressed, so that the image tests' mutations reach the entries' ELF and PTX fields directly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../resources/org/cudagraph4j/test_kernels.fatbin"
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
archs=""
for sm in 80 86 89 90 100 120; do archs+=" -gencode arch=compute_${sm},code=sm_${sm}"; done
"$nvcc" -fatbin --no-compress -O3 $archs -gencode arch=compute_120,code=compute_120 -o "$out" "$here/test_kernels.cu"
echo "wrote $out"
