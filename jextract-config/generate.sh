#!/usr/bin/env bash
# Regenerates the jextract bindings of the library's two native dependencies:
#   cudart  the CUDA runtime API (libcudart.so.13) in src/main/java/org/cudagraph4j/cudart,
#           from the allow-list in jextract-config/cudart.args and cuda_runtime_api.h
#   nvrtc   NVRTC, the runtime compiler (libnvrtc.so.13) in src/main/java/org/cudagraph4j/nvrtc,
#           from the allow-list in jextract-config/nvrtc.args and nvrtc.h
#   driver  the driver API's function-pointer types in src/main/java/org/cudagraph4j/driver,
#           from the allow-list in jextract-config/driver.args and cudaTypedefs.h
#   cublaslt  cuBLASLt (libcublasLt.so.13) in src/main/java/org/cudagraph4j/cublaslt, from the
#           allow-list in jextract-config/cublaslt.args and cublasLt.h
#
#   generate.sh [cudart|nvrtc|driver|cublaslt]...   (no argument: all four)
#
# Environment:
#   JEXTRACT   path to the jextract launcher (default: `jextract` on PATH)
#   CUDA_HOME  CUDA toolkit root holding include/cuda_runtime_api.h, include/nvrtc.h and
#              include/cublasLt.h (default: /usr/local/cuda)
#   JAVAC      javac (JDK 22+) used for the final compile check (default: $JAVA_HOME/bin/javac, then PATH)
#   JEXTRACT_VERBOSE=1  show jextract's "Skipping <unsupported decl>" warnings too
#
# Works from any current directory. Never edit the generated files by hand: change
# the argfile (or this script) and re-run.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)

die() { echo "generate.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- locate tools
JEXTRACT_BIN=${JEXTRACT:-}
if [[ -z "$JEXTRACT_BIN" ]]; then
    JEXTRACT_BIN=$(command -v jextract || true)
fi
if [[ -z "$JEXTRACT_BIN" || ! -x "$JEXTRACT_BIN" ]]; then
    echo "jextract not found: set JEXTRACT=/path/to/jextract or put it on PATH (https://github.com/openjdk/jextract)" >&2
    exit 1
fi

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CUDA_INC="$CUDA_HOME/include"

javac_major() { "$1" -version 2>&1 | sed -nE 's/^javac ([0-9]+).*/\1/p' | head -n1; }
JAVAC_BIN=""
for cand in "${JAVAC:-}" "${JAVA_HOME:+$JAVA_HOME/bin/javac}" "$(command -v javac || true)"; do
    [[ -n "$cand" && -x "$cand" ]] || continue
    major=$(javac_major "$cand")
    if [[ -n "$major" && "$major" -ge 22 ]]; then JAVAC_BIN=$cand; break; fi
done
[[ -n "$JAVAC_BIN" ]] || die "no JDK 22+ javac found for the compile check: set JAVAC or JAVA_HOME"

echo "jextract : $JEXTRACT_BIN ($("$JEXTRACT_BIN" --version 2>&1 | head -n1))"
echo "javac    : $JAVAC_BIN ($("$JAVAC_BIN" -version 2>&1))"

# ---------------------------------------------------------------- one binding
# generate NAME HEADER HEADER_CLASS DESCRIPTION LOADER SONAME
generate() {
    local NAME=$1 HEADER=$2 HEADER_CLASS=$3 DESCRIPTION=$4 LOADER=$5 SONAME=$6
    local LOADING="Symbols are resolved through jextract's default
 * lookup, {@code SymbolLookup.loaderLookup()}: {@code org.cudagraph4j.internal.$LOADER} finds
 * {@code $SONAME} and {@code System.load}s it before the first call."
    if [[ -z "$SONAME" ]]; then
        LOADING="It holds no functions, only the types of the
 * function pointers that {@code org.cudagraph4j.internal.$LOADER} asks the runtime for
 * ({@code cudaGetDriverEntryPointByVersion}), so the library never links against the driver."
    fi
    local ARGS_FILE="$SCRIPT_DIR/$NAME.args"
    local PKG=org.cudagraph4j.$NAME
    local PKG_DIR=src/main/java/org/cudagraph4j/$NAME
    local OUT_DIR="$REPO_ROOT/$PKG_DIR"
    [[ -f "$HEADER" ]] || die "CUDA header not found: $HEADER (set CUDA_HOME to the CUDA 13 toolkit root)"
    echo "$NAME: $HEADER"
    # ---------------------------------------------------------------- run jextract into a scratch dir
    local WORK="$SCRATCH/$NAME"
    mkdir -p "$WORK"

    set +e
    "$JEXTRACT_BIN" @"$ARGS_FILE" \
        --output "$WORK/src" \
        -I "$CUDA_INC" \
        "$HEADER" > "$WORK/jextract.log" 2>&1
    rc=$?
    set -e
    # jextract warns about every unsupported declaration in the whole header (va_list, opaque
    # structs, ...) even when it is not in the allow-list; hide those unless asked.
    if [[ "${JEXTRACT_VERBOSE:-0}" == 1 ]]; then
        cat "$WORK/jextract.log"
    else
        grep -v 'warning: Skipping ' "$WORK/jextract.log" || true
        skipped=$(grep -c 'warning: Skipping ' "$WORK/jextract.log" || true)
        if [[ "$skipped" -gt 0 ]]; then
            echo "(jextract: $skipped 'Skipping <unsupported declaration>' warnings hidden; JEXTRACT_VERBOSE=1 shows them)"
        fi
    fi
    [[ $rc -eq 0 ]] || die "jextract failed (exit $rc)"
    GEN="$WORK/src/${PKG//.//}"
    [[ -f "$GEN/$HEADER_CLASS.java" ]] || die "jextract produced no $PKG_DIR/$HEADER_CLASS.java"
    # jextract exits 0 even when it drops a symbol because of an error; treat any error as fatal
    if grep -q ': error: ' "$WORK/jextract.log"; then die "jextract reported errors (see above)"; fi

    # jextract silently ignores allow-list names that match nothing (e.g. a 12.x name such as
    # cudaGetDeviceProperties_v2): check that every --include-* name produced something.
    H="$GEN/$HEADER_CLASS.java"
    missing=0
    while read -r kind name; do
        case "$kind" in
            --include-function) grep -qE "^    public static [^=]* $name\(" "$H" ;;
            --include-constant) grep -qE "^    public static [^=]* $name\(\) \{" "$H" ;;
            --include-struct|--include-union) [[ -f "$GEN/$name.java" ]] ;;
            --include-typedef) [[ -f "$GEN/$name.java" ]] || grep -qE "^    public static final [A-Za-z.]+ $name = " "$H" ;;
            *) true ;;
        esac || { echo "generate.sh: allow-listed $kind $name was not generated (unknown name in CUDA headers?)" >&2; missing=1; }
    done < <(sed -e 's/#.*//' "$ARGS_FILE" | tr -s ' \t\r' '\n\n\n' | grep -v '^$' | paste - - | grep '^--include-')
    [[ $missing -eq 0 ]] || die "allow-list check failed"

    # ---------------------------------------------------------------- post-process for --release 22
    # 1. SymbolLookup.findOrThrow(String) is JDK 23+. Rewrite
    #      X.findOrThrow("sym")  ->  X.find("sym").orElseThrow(() -> new UnsatisfiedLinkError("unresolved symbol: sym"))
    #    (jextract always passes a string literal; a non-literal form is handled generically too.)
    find "$GEN" -name '*.java' -print0 | xargs -0 perl -pi -e '
        s/\.findOrThrow\("([^"\\]*)"\)/.find("$1").orElseThrow(() -> new UnsatisfiedLinkError("unresolved symbol: $1"))/g;
        s/\.findOrThrow\(([^()]*)\)/.find($1).orElseThrow(() -> new UnsatisfiedLinkError("unresolved symbol: " + $1))/g;
    '
    if grep -rn 'findOrThrow' "$GEN"; then die "post-processing left a findOrThrow call (JDK 23+ API)"; fi

    # 2. Keep jextract's default symbol lookup, and check that it is there: with no -l/--library,
    #    the header class resolves symbols through SymbolLookup.loaderLookup() (then the default
    #    lookup), which sees what this class loader opened with System.load. The loader in
    #    org.cudagraph4j.internal finds the library and System.loads it before any binding is called, so this package
    #    depends on nothing of the library's.
    [[ -z "$SONAME" ]] || grep -qE 'static final SymbolLookup SYMBOL_LOOKUP = SymbolLookup\.loaderLookup\(\)' "$GEN/$HEADER_CLASS.java" \
        || die "jextract's SYMBOL_LOOKUP is no longer SymbolLookup.loaderLookup(): $LOADER's System.load would not reach it"
    if grep -rn 'org\.cudagraph4j\.' "$GEN" | grep -v "^[^:]*:[0-9]*:package $PKG;" | grep -v "org\.cudagraph4j\.$NAME\b"; then
        die "the generated bindings name another package of the library (above); they must depend on nothing of it"
    fi

    # 3. FFM code calls restricted methods (Linker.downcallHandle, MemorySegment.reinterpret, ...);
    #    the build compiles with -Xlint:all, so silence the [restricted] lint on each generated
    #    top-level class (about 100 warnings otherwise). Native access itself is still governed at
    #    run time by --enable-native-access.
    find "$GEN" -name '*.java' -print0 | xargs -0 perl -pi -e 's/^public (final class|class|interface) /\@SuppressWarnings("restricted")\npublic $1 /'

    # 4. Generated-file marker: jextract writes "// Generated by jextract" as line 1; make it
    #    explicit that the file is produced by this script (and add it if a jextract version omits it).
    MARKER='// Generated by jextract via jextract-config/generate.sh -- DO NOT EDIT BY HAND.'
    for f in "$GEN"/*.java; do
        if [[ "$(head -n1 "$f")" == "// Generated by jextract" ]]; then
            perl -pi -e 'if ($. == 1) { $_ = "'"$MARKER"'\n" }' "$f"
        else
            { echo "$MARKER"; cat "$f"; } > "$f.tmp" && mv "$f.tmp" "$f"
        fi
    done

    # 5. package-info.java
    cat > "$GEN/package-info.java" <<EOF
$MARKER

/**
 * Raw jextract bindings for $DESCRIPTION.
 *
 * <p><b>Generated code.</b> This package is generated by {@code jextract-config/generate.sh}
 * from the allow-list in {@code jextract-config/$NAME.args} and is never edited by hand:
 * change the argfile and re-run the script. $LOADING Only
 * {@code org.cudagraph4j.internal} calls this package, and this package depends on no other of the
 * library's.
 */
package $PKG;
EOF

    # ---------------------------------------------------------------- replace the package
    rm -rf "$OUT_DIR"
    mkdir -p "$(dirname "$OUT_DIR")"
    cp -r "$GEN" "$OUT_DIR"

    # ---------------------------------------------------------------- verify: compiles with --release 22, alone
    # An empty source path: a reference to any other package of the library fails the compile.
    mkdir -p "$WORK/classes" "$WORK/no-other-sources"
    (cd "$REPO_ROOT" && find "$PKG_DIR" -name '*.java' -print0 | sort -z \
        | xargs -0 "$JAVAC_BIN" --release 22 -Xlint:all -Werror -proc:none -implicit:none \
            -sourcepath "$WORK/no-other-sources" -d "$WORK/classes") \
        || die "generated sources do not compile cleanly with javac --release 22 -Xlint:all -Werror"

    count=$(find "$OUT_DIR" -name '*.java' | wc -l)
    size=$(du -sh "$OUT_DIR" | cut -f1)
    echo "OK: $count files ($size) in $PKG_DIR; javac --release 22 -Xlint:all -Werror compiles clean"
}

# ---------------------------------------------------------------- main
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(cudart nvrtc driver cublaslt)
for target in "${targets[@]}"; do
    case "$target" in
        cudart) generate cudart "$CUDA_INC/cuda_runtime_api.h" cudart_h \
                    "the CUDA runtime API ({@code libcudart.so.13}, CUDA 13.0)" CudartLoader libcudart.so.13 ;;
        nvrtc)  generate nvrtc "$CUDA_INC/nvrtc.h" nvrtc_h \
                    "NVRTC, the CUDA runtime compiler ({@code libnvrtc.so.13}, CUDA 13.0)" NvrtcLoader libnvrtc.so.13 ;;
        driver) generate driver "$CUDA_INC/cudaTypedefs.h" driver_h \
                    "the CUDA driver API's function-pointer types ({@code cudaTypedefs.h}, CUDA 13.0)" Driver "" ;;
        cublaslt) generate cublaslt "$CUDA_INC/cublasLt.h" cublasLt_h \
                    "cuBLASLt, the lightweight BLAS matmul library ({@code libcublasLt.so.13}, CUDA 13.0)" CublasLtLoader libcublasLt.so.13 ;;
        *) die "unknown binding: $target (cudart, nvrtc, driver or cublaslt)" ;;
    esac
done
