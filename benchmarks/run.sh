#!/usr/bin/env bash
# The launch-overhead comparison from a source checkout: checks for a GPU, builds the GPU bundle
# (Maven and a JDK 22+, picked as .ci/run does), then runs its bin/run-benchmarks, which writes
# benchmarks/results/<gpu>-<date>/. Arguments go to bin/run-benchmarks (--smoke, JMH options).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "run.sh: no NVIDIA GPU here (nvidia-smi finds none); the benchmarks need one" >&2
    exit 2
fi

java_major() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -nE 's/^ *java\.specification\.version = ([0-9]+).*/\1/p'; }
if [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/javac" || "$(java_major "$JAVA_HOME")" -lt 22 ]]; then
    JAVA_HOME=""
    for candidate in /usr/lib/jvm/*; do
        if [[ -x "$candidate/bin/javac" && "$(java_major "$candidate")" -ge 22 ]]; then
            JAVA_HOME=$candidate
        fi
    done
    [[ -n "$JAVA_HOME" ]] || { echo "run.sh: the build needs a JDK 22 or newer; set JAVA_HOME to one" >&2; exit 1; }
fi
export JAVA_HOME

log="$root/target/benchmarks-build.log"
mkdir -p "$root/target"
if ! (cd "$root" && mvn -B -Pgpu-bundle package -DskipTests > "$log" 2>&1); then
    echo "run.sh: building the GPU bundle failed (JAVA_HOME=$JAVA_HOME); the end of $log:" >&2
    tail -20 "$log" >&2
    exit 1
fi
# The bundle's runtime has no java.desktop; this JDK draws the report's chart.
REPORT_JAVA="$JAVA_HOME/bin/java" exec "$root/target/gpu-bundle/cudagraph4j-gpu-bundle/bin/run-benchmarks" \
    --out "$root/benchmarks/results" "$@"
