#!/usr/bin/env bash
# Builds a fully static pillbox release binary: glibc linked in with
# crt-static, SQLite compiled in (rusqlite "bundled"), no OpenSSL.
#
#   packaging/build-static.sh                 # for this machine (x86_64 or aarch64)
#   packaging/build-static.sh aarch64-unknown-linux-gnu   # cross, needs a cross linker
#   packaging/build-static.sh armv7-unknown-linux-gnueabihf   # 32-bit Raspberry Pi OS, likewise
#
# musl targets are not used: a static glibc build works with the stock
# toolchain. `--target` must be given explicitly so that RUSTFLAGS reach only
# the final binary, not build scripts and proc macros (which must stay dynamic).
#
# Honours CARGO_TARGET_DIR. Prints the path of the binary on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -gt 1 ]]; then
    echo "usage: $0 [TARGET-TRIPLE]" >&2
    exit 2
fi

if [[ $# -eq 1 ]]; then
    target=$1
else
    case "$(uname -m)" in
        x86_64 | amd64) target=x86_64-unknown-linux-gnu ;;
        aarch64 | arm64) target=aarch64-unknown-linux-gnu ;;
        armv7l) target=armv7-unknown-linux-gnueabihf ;;
        *)
            echo "build-static.sh: unsupported machine $(uname -m); pass a target triple" >&2
            exit 2
            ;;
    esac
fi

# Cross-building to ARM from another machine with Debian's cross compilers
# (gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf and their libc6-dev-*-cross):
# cargo needs the linker, and the cc crate (bundled SQLite, ring) the C
# compiler and archiver. Each can be overridden through the same variable.
link_args=
case "$target:$(uname -m)" in
    aarch64-unknown-linux-gnu:aarch64 | aarch64-unknown-linux-gnu:arm64) ;;
    aarch64-unknown-linux-gnu:*)
        export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER:-aarch64-linux-gnu-gcc}
        export CC_aarch64_unknown_linux_gnu=${CC_aarch64_unknown_linux_gnu:-aarch64-linux-gnu-gcc}
        export AR_aarch64_unknown_linux_gnu=${AR_aarch64_unknown_linux_gnu:-aarch64-linux-gnu-ar}
        ;;
    armv7-unknown-linux-gnueabihf:armv7l) ;;
    armv7-unknown-linux-gnueabihf:*)
        export CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_LINKER=${CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_LINKER:-arm-linux-gnueabihf-gcc}
        export CC_armv7_unknown_linux_gnueabihf=${CC_armv7_unknown_linux_gnueabihf:-arm-linux-gnueabihf-gcc}
        export AR_armv7_unknown_linux_gnueabihf=${AR_armv7_unknown_linux_gnueabihf:-arm-linux-gnueabihf-ar}
        # Linked with gold: ld.bfd 2.40 (Debian 12) drops the Thumb bit of
        # glibc's ifunc resolvers in a static link whose code passes 16 MB
        # (Thumb-2's branch range), and the binary dies in start-up before
        # main (SIGSEGV in apply_irel). A static C program of 20 MB shows it
        # too; gold links both correctly.
        link_args="-C link-arg=-fuse-ld=gold"
        ;;
esac

echo "build-static.sh: building pillbox for $target" >&2
RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static${link_args:+ $link_args}" \
    cargo build --release --locked --target "$target"

target_dir=${CARGO_TARGET_DIR:-target}
bin="$target_dir/$target/release/pillbox"

echo "--- file $bin" >&2
if command -v file >/dev/null; then
    file "$bin" >&2
else
    echo "(file is not installed)" >&2
fi
echo "--- ldd $bin" >&2
# A static PIE: ldd prints "statically linked" (older ldd versions say "not a
# dynamic executable" and exit 1), either is the goal.
ldd "$bin" >&2 || true
ls -l "$bin" >&2

if [[ $target == "$(uname -m)"-* ]] || [[ $target == aarch64-* && $(uname -m) == arm64 ]]; then
    echo "--- $bin --version" >&2
    "$bin" --version >&2
fi

echo "$bin"
