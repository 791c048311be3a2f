#!/usr/bin/env bash
# Builds the release files into dist/, from one x86_64 Debian machine:
#   pillbox-<version>-x86_64-linux     static binary, x86_64 PCs and servers
#   pillbox-<version>-aarch64-linux    static binary, Raspberry Pi 3/4/5 and Zero 2 W on a 64-bit OS
#   pillbox-<version>-armv7-linux      static binary, 32-bit Raspberry Pi OS (armhf)
#   pillbox_<version>-1_{amd64,arm64,armhf}.deb   each binary packaged by cargo deb
#   SHA256SUMS                         sha256sum of all of them
# then smoke-tests every binary (packaging/smoke-test.sh: the ARM ones under
# qemu-user-static) and inspects every .deb (packaging/inspect-deb.sh).
#
#   packaging/build-release.sh
#   PILLBOX_RELEASE_TARGETS="aarch64 armv7" packaging/build-release.sh   # some of them
#
# What it needs, installed as it goes (it says each step; Debian packages
# only as root, otherwise it prints the apt-get command and stops):
# - Debian's cross compilers and C libraries (gcc-aarch64-linux-gnu,
#   libc6-dev-arm64-cross, gcc-arm-linux-gnueabihf, libc6-dev-armhf-cross),
#   qemu-user-static, curl, jq, file;
# - the Rust standard library of each target from rustup (`rustup target
#   add`). Debian's own Rust (rustc-web, with libstd-rust-web-dev:<arch>) is
#   not used: Debian 12's is 1.85, older than the crates in Cargo.lock need;
# - cargo-deb: the one on PATH, or else `cargo install cargo-deb --locked`
#   into target/release-tools (nothing installed outside the repository).
#
# Linkers and C compilers are passed to cargo through environment variables
# by build-static.sh, not a committed .cargo/config.toml, so a normal
# `cargo build` stays untouched wherever no cross gcc is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "build-release.sh: $*" >&2; }

targets=${PILLBOX_RELEASE_TARGETS:-x86_64 aarch64 armv7}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

triple_of() {
    case "$1" in
        x86_64) echo x86_64-unknown-linux-gnu ;;
        aarch64) echo aarch64-unknown-linux-gnu ;;
        armv7) echo armv7-unknown-linux-gnueabihf ;;
        *)
            say "unknown target $1 (x86_64, aarch64, armv7)"
            exit 2
            ;;
    esac
}
deb_arch_of() {
    case "$1" in
        x86_64) echo amd64 ;;
        aarch64) echo arm64 ;;
        armv7) echo armhf ;;
    esac
}
# The emulator a binary of that target runs under here (none: natively).
runner_of() {
    case "$1" in
        x86_64) ;;
        aarch64) echo qemu-aarch64-static ;;
        armv7) echo qemu-arm-static ;;
    esac
}

[[ $(uname -m) == x86_64 ]] || {
    say "run this on an x86_64 machine (it is $(uname -m))"
    exit 2
}

# 1. Debian packages.
packages=(curl jq file gcc libc6-dev)
for t in $targets; do
    case "$t" in
        aarch64) packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static) ;;
        armv7) packages+=(gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user-static) ;;
    esac
done
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q " installed$" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
    say "Debian packages present: ${packages[*]}"
elif [[ $(id -u) == 0 ]]; then
    say "installing Debian packages: apt-get install -y ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >&2
else
    say "missing Debian packages; run: sudo apt-get install -y ${missing[*]}"
    exit 1
fi

# 2. Rust: the standard library of each target.
say "Rust toolchain: $(rustc --version), $(cargo --version)"
for t in $targets; do
    triple=$(triple_of "$t")
    if command -v rustup >/dev/null; then
        if ! rustup target list --installed | grep -qx "$triple"; then
            say "installing the Rust standard library for $triple: rustup target add $triple"
            rustup target add "$triple" >&2
        fi
    elif [[ $triple != x86_64-unknown-linux-gnu ]]; then
        say "no rustup: install the standard library for $triple with your toolchain's tools"
    fi
done

# 3. cargo-deb.
if ! command -v cargo-deb >/dev/null; then
    export PATH="$PWD/target/release-tools/bin:$PATH"
    if ! command -v cargo-deb >/dev/null; then
        say "installing cargo-deb into target/release-tools: cargo install cargo-deb --locked --root target/release-tools"
        cargo install cargo-deb --locked --root target/release-tools >&2
    fi
fi
say "cargo-deb: $(command -v cargo-deb) ($(cargo deb --version 2>/dev/null || echo '?'))"

# 4. Binaries and packages.
rm -rf dist
mkdir -p dist
summary=()
for t in $targets; do
    triple=$(triple_of "$t")
    arch=$(deb_arch_of "$t")
    say "building the static binary for $triple: packaging/build-static.sh $triple"
    started=$(date +%s)
    bin=$(packaging/build-static.sh "$triple" | tail -n 1)
    secs=$(($(date +%s) - started))
    out=dist/pillbox-$version-$t-linux
    install -m 0755 "$bin" "$out"
    say "packaging $out as a .deb for $arch: cargo deb --no-build --no-strip --target $triple"
    # --no-build: package the binary just built (cargo deb maps
    # target/release/pillbox to target/<triple>/release/pillbox); it is
    # already stripped (profile.release strip = true).
    cargo deb --no-build --no-strip --target "$triple" --output dist/ >&2
    summary+=("$t: $out $(stat -c %s "$out") bytes ($(file -b "$out" | grep -o 'stripped\|not stripped' | tail -n 1 || true)), build ${secs} s")
done

(cd dist && sha256sum -- * >SHA256SUMS)
say "dist/SHA256SUMS:"
cat dist/SHA256SUMS >&2

# 5. Smoke tests and package inspection; every target is tried, then any failure fails.
failed=0
for t in $targets; do
    arch=$(deb_arch_of "$t")
    read -r -a runner <<<"$(runner_of "$t")"
    say "smoke test of $t: packaging/smoke-test.sh dist/pillbox-$version-$t-linux ${runner[*]}"
    if line=$(packaging/smoke-test.sh "dist/pillbox-$version-$t-linux" "${runner[@]}"); then
        summary+=("$t: $line")
    else
        failed=1
        summary+=("$t: SMOKE TEST FAILED")
    fi
    deb=dist/pillbox_${version}-1_$arch.deb
    say "inspecting $deb: packaging/inspect-deb.sh $deb $arch ${runner[*]}"
    if line=$(packaging/inspect-deb.sh "$deb" "$arch" "${runner[@]}"); then
        summary+=("$t: $line")
    else
        failed=1
        summary+=("$t: .deb INSPECTION FAILED")
    fi
done

say "dist/:"
ls -l dist >&2
for line in "${summary[@]}"; do
    say "$line"
done
if [[ $failed != 0 ]]; then
    say "FAILED (see above)"
    exit 1
fi
say "all release files built, smoke-tested and inspected"
