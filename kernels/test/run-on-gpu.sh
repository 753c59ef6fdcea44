#!/usr/bin/env bash
# Builds the native check+bench harness (links cuBLAS) and runs it against the committed
# kernels/build/cg4j_kernels.sm_90.cubin, then the tensor-core harness (test/tensor_op_test.cu,
# compiled from the headers). Run on a machine with a GPU and nvcc; prints a short table last.
# Logs go to $OUT (if set) or kernels/test/out/.
set -euo pipefail
KDIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${OUT:-$KDIR/test/out}"
mkdir -p "$OUTDIR"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="${NVCC:-$CUDA_HOME/bin/nvcc}"
BIN="$(mktemp -d)/cg4j_test"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  | tee "$OUTDIR/gpu.txt" || true
echo "building harness..."
"$NVCC" -std=c++17 -O3 -arch=sm_90 -I"$KDIR/include" -Xcompiler -fopenmp -Xptxas -v \
  -o "$BIN" "$KDIR/test/cg4j_test.cu" -lcublas 2> "$OUTDIR/harness-ptxas.txt" \
  || { cat "$OUTDIR/harness-ptxas.txt"; exit 1; }

# Instruction mix of the shipped large tile's SASS (the disassembler lives on the GPU image).
if command -v cuobjdump >/dev/null 2>&1 || [[ -x "$CUDA_HOME/bin/cuobjdump" ]]; then
  OBJ="$(command -v cuobjdump || echo "$CUDA_HOME/bin/cuobjdump")"
  "$OBJ" -sass "$KDIR/build/cg4j_kernels.sm_90.cubin" > "$OUTDIR/sass.sm_90.txt" 2>&1 || true
  awk '/Function :/ {f=$3} /FFMA|LDS|LDGSTS|BAR.SYNC|STG|LDG|DEPBAR|LDL|STL/ {
         for (i = 1; i <= NF; i++) if ($i ~ /^(FFMA|LDS|LDS\.128|LDS\.64|LDGSTS|LDGSTS\.E|BAR\.SYNC|STG\.E|LDG\.E|DEPBAR|LDL|STL)/) { split($i, a, " "); c[f" "$i]++ } }
       END { for (k in c) print k, c[k] }' "$OUTDIR/sass.sm_90.txt" | sort > "$OUTDIR/sass-mix.sm_90.txt" || true
fi

set +e
OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}" "$BIN" "$KDIR/build" "$@" 2>&1 | tee "$OUTDIR/harness.log"
rc=${PIPESTATUS[0]}
grep -E "128x128x16_3_t[tn]t_align4_lincomb" "$OUTDIR/sass-mix.sm_90.txt" 2>/dev/null | head -20

echo "building the tensor-core harness..."
TC_BIN="$(dirname "$BIN")/tensor_op_test"
# sm_90a: the harness carries the wgmma variants beside the mma.sync ones.
"$NVCC" -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I"$KDIR/include" -Xcompiler -fopenmp \
  -o "$TC_BIN" "$KDIR/test/tensor_op_test.cu" -lcublas 2> "$OUTDIR/tensor-op-build.txt" \
  || { cat "$OUTDIR/tensor-op-build.txt"; exit 1; }
OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}" "$TC_BIN" 2>&1 | tee "$OUTDIR/tensor-op.log"
tc_rc=${PIPESTATUS[0]}
(( rc != 0 )) && exit $rc
exit $tc_rc
