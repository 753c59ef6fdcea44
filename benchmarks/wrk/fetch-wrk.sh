#!/usr/bin/env bash
# Puts wrk (the HTTP benchmarking tool, Apache-2.0) and the LuaJIT library it links (MIT) into
# benchmarks/wrk/dist/, from Debian's packages, for the GPU bundle: the binary travels inside the
# bundle, so the GPU host needs no package of its own, and bin/run-serving-benchmark uses it when it
# is there.
#
#   benchmarks/wrk/fetch-wrk.sh          # once, on a Debian or Ubuntu build machine (needs apt)
#   mvn -B -Pgpu-bundle package          # then copies dist/ into the bundle's benchmarks/wrk/
#
# The build never runs this (it needs the package mirror); without dist/ the bundle has no wrk and
# the serving benchmark skips that cross-check. dist/ is ignored by git.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dist="$here/dist"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# wrk links libluajit-5.1.so.2 (not on a typical GPU host) and libssl.so.3/libcrypto.so.3 (on every
# current Ubuntu and Debian, so they are not shipped); the rest is glibc.
apt-get download wrk libluajit-5.1-2 > download.log 2>&1 || {
    echo "fetch-wrk: apt-get download failed (run 'apt-get update' first?):" >&2
    cat download.log >&2
    exit 1
}
for deb in wrk_*.deb libluajit-5.1-2_*.deb; do
    dpkg-deb -x "$deb" root
done
rm -rf "$dist"
mkdir -p "$dist/bin" "$dist/lib" "$dist/licenses"
cp root/usr/bin/wrk "$dist/bin/wrk"
cp -L root/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 "$dist/lib/libluajit-5.1.so.2"
cp root/usr/share/doc/wrk/copyright "$dist/licenses/wrk.copyright"
cp root/usr/share/doc/libluajit-5.1-2/copyright "$dist/licenses/libluajit-5.1-2.copyright"
{
    echo "From Debian's packages, by benchmarks/wrk/fetch-wrk.sh on $(date -u +%Y-%m-%d):"
    for deb in wrk_*.deb libluajit-5.1-2_*.deb; do
        echo "  $deb  sha256 $(sha256sum "$deb" | cut -d' ' -f1)"
    done
    echo "Needs on the host: glibc 2.34 or newer, libssl.so.3 and libcrypto.so.3 (OpenSSL 3)."
} > "$dist/VERSIONS.txt"
cat > "$dist/wrk" <<'WRAPPER'
#!/usr/bin/env bash
# wrk with the LuaJIT library shipped beside it.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/wrk" "$@"
WRAPPER
chmod 755 "$dist/wrk" "$dist/bin/wrk"
"$dist/wrk" --version 2>&1 | head -1 || true
echo "fetch-wrk: wrote $dist"
cat "$dist/VERSIONS.txt"
