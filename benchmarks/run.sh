#!/usr/bin/env bash
# The launch-overhead comparison from a source checkout: builds the GPU bundle (JDK 22+ and Maven
# needed), then runs its bin/run-benchmarks, which writes benchmarks/results/<gpu>-<date>/.
# Without a GPU it stops with one line. Arguments go to bin/run-benchmarks (--smoke, JMH options).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log="$root/target/benchmarks-build.log"
mkdir -p "$root/target"
if ! (cd "$root" && mvn -B -Pgpu-bundle package -DskipTests > "$log" 2>&1); then
    echo "run.sh: building the GPU bundle failed; see $log" >&2
    exit 1
fi
exec "$root/target/gpu-bundle/cudagraph4j-gpu-bundle/bin/run-benchmarks" --out "$root/benchmarks/results" "$@"
