#!/usr/bin/env bash
# Builds the release files into dist/:
#   pillbox-<version>-x86_64-linux        the fully static binary (build-static.sh)
#   pillbox_<version>-1_amd64.deb         the same binary packaged by cargo deb
#   SHA256SUMS                            sha256sum of both
#
#   packaging/build-release.sh
#
# Needs cargo-deb (`cargo install cargo-deb`) and, like build-static.sh, a C
# compiler. Run it on an x86_64 machine. aarch64 (Raspberry Pi) files are not
# cross-built yet: build on the Pi with build-static.sh (see packaging/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
if ! command -v cargo-deb >/dev/null; then
    echo "build-release.sh: cargo-deb is not installed; run: cargo install cargo-deb" >&2
    exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

bin=$(packaging/build-static.sh "$target")

rm -rf dist
mkdir -p dist
install -m 0755 "$bin" "dist/pillbox-$version-x86_64-linux"
# --no-build: package the static binary just built (cargo deb maps
# target/release/pillbox to target/<target>/release/pillbox).
cargo deb --no-build --target "$target" --output dist/ >&2

(cd dist && sha256sum -- * > SHA256SUMS)
echo "build-release.sh: dist/ holds" >&2
ls -l dist >&2
cat dist/SHA256SUMS
