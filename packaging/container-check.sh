#!/usr/bin/env bash
# Builds packaging/Containerfile with Podman and checks the image runs:
# health check, /api/v1/capabilities, `pillbox setup` through `podman exec`,
# uid 65532, /data as a volume that survives a restart, a graceful stop.
#
#   packaging/container-check.sh              # stand-in bases if missing, build, run checks
#   packaging/container-check.sh --bases-only # only make the stand-in base images
#   packaging/container-check.sh --rebuild-bases
#   packaging/container-check.sh --keep       # leave the container and volume behind
#
# STAND-IN BASE IMAGES. The Containerfile starts from
# docker.io/library/rust:1.95-bookworm and gcr.io/distroless/static-debian12:nonroot.
# Where those registries are unreachable (the machine this was written on
# reaches only the Debian, crates.io, PyPI and npm package registries), this
# script makes local stand-ins under exactly those names, from Debian packages:
#   - rust:1.95-bookworm: a debootstrap'ed Debian 12 (minbase plus
#     build-essential, ca-certificates, file, libc6-dev, tzdata, netbase) with
#     this host's rustup and its Rust 1.95.0 toolchain copied to /usr/local/rustup
#     and /usr/local/cargo, ENV and PATH as the official image sets them;
#   - distroless/static-debian12:nonroot: /etc/passwd and /etc/group (root,
#     nobody, nonroot 65532), CA certificates, tzdata, /etc/os-release,
#     /etc/nsswitch.conf, /tmp (1777), /home/nonroot (65532); USER 65532,
#     WORKDIR /home/nonroot, SSL_CERT_FILE as distroless sets them.
# They are NOT the published images: a pass here says the Containerfile, the
# build context and the binary work, not that the real bases are identical.
# If the real images are already present (pulled), they are used as they are
# and nothing is replaced (unless --rebuild-bases).
#
# Needs root (debootstrap, podman as root), podman, debootstrap, curl, and a
# rustup toolchain 1.95.0 on the host (for the rust stand-in only). Missing
# podman or debootstrap: says so and exits 0 (skipped). Network: the build
# stage fetches crates from crates.io through Podman's default network.
#
# Scratch files (rootfs, tarballs) go to $PILLBOX_CONTAINER_SCRATCH
# (default /var/tmp/pillbox-container-check), never into the repository.
# The check container publishes 127.0.0.1:${PILLBOX_CHECK_PORT:-18080}.
set -euo pipefail
cd "$(dirname "$0")/.."

bases_only=false
rebuild_bases=false
keep=false
for arg in "$@"; do
    case "$arg" in
        --bases-only) bases_only=true ;;
        --rebuild-bases) rebuild_bases=true ;;
        --keep) keep=true ;;
        *)
            echo "usage: $0 [--bases-only] [--rebuild-bases] [--keep]" >&2
            exit 2
            ;;
    esac
done

say() { echo "container-check: $*" >&2; }

for tool in podman debootstrap curl; do
    if ! command -v "$tool" >/dev/null; then
        say "$tool is not installed (apt-get install podman debootstrap curl); container check skipped"
        exit 0
    fi
done
if [[ $(id -u) != 0 ]]; then
    say "needs root (debootstrap and podman as root); container check skipped"
    exit 0
fi

RUST_IMAGE=docker.io/library/rust:1.95-bookworm
RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot
RUST_TOOLCHAIN=1.95.0-x86_64-unknown-linux-gnu
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
scratch=${PILLBOX_CONTAINER_SCRATCH:-/var/tmp/pillbox-container-check}
port=${PILLBOX_CHECK_PORT:-18080}
name=pillbox-check
volume=pillbox-check-data
image=pillbox:check

if [[ $(uname -m) != x86_64 ]]; then
    say "the stand-in rust image copies an x86_64 host toolchain; on $(uname -m) pull the real bases instead"
fi

mkdir -p "$scratch"

# ---- the Debian 12 root file system both stand-ins start from ----
debian_rootfs() {
    local rootfs=$scratch/$SUITE-rootfs
    if [[ -f $rootfs/.complete ]]; then
        echo "$rootfs"
        return
    fi
    say "debootstrap $SUITE into $rootfs (a few minutes)"
    rm -rf "$rootfs.tmp"
    nice -n 19 debootstrap --variant=minbase \
        --include=build-essential,ca-certificates,file,libc6-dev,tzdata,netbase \
        "$SUITE" "$rootfs.tmp" "$MIRROR" >"$scratch/debootstrap.log" 2>&1 || {
        say "debootstrap failed; see $scratch/debootstrap.log"
        exit 1
    }
    rm -rf "$rootfs"
    mv "$rootfs.tmp" "$rootfs"
    touch "$rootfs/.complete"
    echo "$rootfs"
}

make_rust_standin() {
    local rootfs dir sysroot rustup_bin
    rootfs=$(debian_rootfs)
    dir=$scratch/rust-rootfs
    sysroot=$(rustup run "$RUST_TOOLCHAIN" rustc --print sysroot 2>/dev/null) || {
        say "no rustup toolchain $RUST_TOOLCHAIN on the host (rustup toolchain install 1.95.0); cannot make the rust stand-in"
        exit 1
    }
    rustup_bin=$(command -v rustup)
    say "making the stand-in $RUST_IMAGE from $rootfs and $sysroot"
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -C "$rootfs" --exclude=./.complete -cf - . | tar -C "$dir" -xpf -
    # Debian's apt lists and caches are not wanted in an image.
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
    # The toolchain without its HTML documentation, under the name rustup knows it by.
    mkdir -p "$dir/usr/local/rustup/toolchains/$RUST_TOOLCHAIN" "$dir/usr/local/cargo/bin"
    tar -C "$sysroot" --exclude=./share/doc -cf - . | tar -C "$dir/usr/local/rustup/toolchains/$RUST_TOOLCHAIN" -xpf -
    cat >"$dir/usr/local/rustup/settings.toml" <<EOF
version = "12"
default_toolchain = "$RUST_TOOLCHAIN"
profile = "minimal"

[overrides]
EOF
    install -m 0755 "$rustup_bin" "$dir/usr/local/cargo/bin/rustup"
    local proxy
    for proxy in cargo rustc rustdoc cargo-clippy clippy-driver rustfmt cargo-fmt rust-gdb rust-gdbgui rust-lldb; do
        ln -sf rustup "$dir/usr/local/cargo/bin/$proxy"
    done
    chmod -R a+w "$dir/usr/local/rustup" "$dir/usr/local/cargo"
    tar -C "$dir" --numeric-owner -cf "$scratch/rust-standin.tar" .
    podman rmi -f "$RUST_IMAGE" >/dev/null 2>&1 || true
    podman import \
        --change "ENV RUSTUP_HOME=/usr/local/rustup" \
        --change "ENV CARGO_HOME=/usr/local/cargo" \
        --change "ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV RUST_VERSION=1.95.0" \
        --change "LABEL pillbox.stand-in=debootstrap-bookworm-plus-host-rust-1.95.0" \
        --change 'CMD ["bash"]' \
        --message "Pillbox stand-in for $RUST_IMAGE, built from Debian packages and the host's Rust toolchain" \
        "$scratch/rust-standin.tar" "$RUST_IMAGE" >/dev/null
    rm -f "$scratch/rust-standin.tar"
    podman run --rm "$RUST_IMAGE" cargo --version >&2
}

make_runtime_standin() {
    local rootfs dir
    rootfs=$(debian_rootfs)
    dir=$scratch/distroless-rootfs
    say "making the stand-in $RUNTIME_IMAGE from $rootfs"
    rm -rf "$dir"
    mkdir -p "$dir"/{etc/ssl/certs,usr/share,usr/lib,tmp,root,home/nonroot}
    cat >"$dir/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
    cat >"$dir/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
    cp "$rootfs/etc/ssl/certs/ca-certificates.crt" "$dir/etc/ssl/certs/"
    cp -a "$rootfs/usr/share/zoneinfo" "$dir/usr/share/"
    cp "$rootfs/usr/lib/os-release" "$dir/usr/lib/os-release"
    ln -s ../usr/lib/os-release "$dir/etc/os-release"
    cp "$rootfs/etc/services" "$rootfs/etc/protocols" "$dir/etc/"
    echo "hosts: files dns" >"$dir/etc/nsswitch.conf"
    chmod 1777 "$dir/tmp"
    chmod 0700 "$dir/root" "$dir/home/nonroot"
    chown 65532:65532 "$dir/home/nonroot"
    tar -C "$dir" --numeric-owner -cf "$scratch/distroless-standin.tar" .
    podman rmi -f "$RUNTIME_IMAGE" >/dev/null 2>&1 || true
    podman import \
        --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
        --change "USER 65532" \
        --change "WORKDIR /home/nonroot" \
        --change "LABEL pillbox.stand-in=debian-bookworm-files-like-distroless-static-nonroot" \
        --message "Pillbox stand-in for $RUNTIME_IMAGE, built from Debian packages" \
        "$scratch/distroless-standin.tar" "$RUNTIME_IMAGE" >/dev/null
    rm -f "$scratch/distroless-standin.tar"
}

if $rebuild_bases || ! podman image exists "$RUST_IMAGE"; then
    make_rust_standin
else
    say "$RUST_IMAGE is present; kept ($(podman image inspect --format '{{index .Labels "pillbox.stand-in"}}' "$RUST_IMAGE" | sed 's/^$/not a stand-in/;s/<no value>/not a stand-in/'))"
fi
if $rebuild_bases || ! podman image exists "$RUNTIME_IMAGE"; then
    make_runtime_standin
else
    say "$RUNTIME_IMAGE is present; kept ($(podman image inspect --format '{{index .Labels "pillbox.stand-in"}}' "$RUNTIME_IMAGE" | sed 's/^$/not a stand-in/;s/<no value>/not a stand-in/'))"
fi
podman images --filter reference="$RUST_IMAGE" --filter reference="$RUNTIME_IMAGE" >&2
if $bases_only; then
    exit 0
fi

# ---- the build ----
# --format docker: Podman writes OCI images by default, and the OCI image
# format has no HEALTHCHECK; without it the health check is dropped (with a
# warning) and `podman healthcheck run` says the container has none.
# Behind a TLS-intercepting proxy (the host trusts extra CAs from
# /usr/local/share/ca-certificates), cargo in the build stage fails with
# "SSL certificate problem: self-signed certificate in certificate chain".
# The host's CA bundle is then mounted over the build stage's for the RUN
# steps only (nothing of it lands in the image); the Containerfile is unchanged.
build_opts=(--format docker)
ca_bundle=${PILLBOX_BUILD_CA_BUNDLE:-}
if [[ -z $ca_bundle ]] && compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    ca_bundle=/etc/ssl/certs/ca-certificates.crt
fi
if [[ -n $ca_bundle ]]; then
    say "the host trusts local CAs: mounting $ca_bundle into the build's RUN steps"
    build_opts+=(-v "$ca_bundle:/etc/ssl/certs/ca-certificates.crt:ro")
fi
say "podman build ${build_opts[*]} -f packaging/Containerfile -t $image ."
start=$(date +%s)
nice -n 19 podman build "${build_opts[@]}" -f packaging/Containerfile -t "$image" . >&2
say "build took $(($(date +%s) - start)) s"
podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "container-check: image size %.1f MB (%d bytes)\n", $1 / 1e6, $1 }' >&2
test "$(podman image inspect --format '{{.Config.User}}' "$image")" = 65532:65532
podman image inspect --format 'container-check: health check {{json .Config.Healthcheck}}' "$image" >&2

# ---- the run ----
cleanup() {
    if ! $keep; then
        podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
        podman volume rm -f "$volume" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
podman volume rm -f "$volume" >/dev/null 2>&1 || true

wait_healthy() {
    local i
    for i in $(seq 1 60); do
        if podman healthcheck run "$name" >/dev/null 2>&1; then
            say "healthy after about $((i / 2)) s: $(podman inspect --format '{{.State.Health.Status}}' "$name" 2>/dev/null || podman inspect --format '{{.State.Healthcheck.Status}}' "$name")"
            return 0
        fi
        sleep 0.5
    done
    say "not healthy after 30 s"
    podman logs "$name" >&2 || true
    exit 1
}

podman run -d --name "$name" -p "127.0.0.1:$port:8080" -v "$volume:/data" "$image" >/dev/null
wait_healthy
podman exec "$name" /pillbox health >&2
say "podman exec $name /pillbox health: exit $?"
# (stderr dropped: without systemd, Podman logs that it cannot set up the timers)
hc_out=$(podman healthcheck run "$name" 2>/dev/null)
say "podman healthcheck run $name: exit 0, printed '$hc_out'"
say "GET http://127.0.0.1:$port/api/v1/capabilities:"
curl -fsS "http://127.0.0.1:$port/api/v1/capabilities" >&2
echo >&2

pid=$(podman inspect --format '{{.State.Pid}}' "$name")
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
say "serve runs as uid $uid (pid $pid on the host)"
test "$uid" = 65532
podman inspect --format '{{range .Mounts}}container-check: mount {{.Type}} {{.Name}} -> {{.Destination}}{{"\n"}}{{end}}' "$name" >&2
podman inspect --format '{{range .Mounts}}{{.Type}} {{.Destination}}{{"\n"}}{{end}}' "$name" | grep -qx 'volume /data'

say "setup and a token through podman exec (the password on stdin)"
printf '%s\n' 'container check password' |
    podman exec -i "$name" /pillbox setup --household "Our home" --email you@example.org --time-zone Europe/London --name "You" >&2
token=$(podman exec "$name" /pillbox token create --household 1 --email you@example.org --name check)
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/households/1/people")
say "GET /api/v1/households/1/people with the token: HTTP $code"
test "$code" = 200

say "podman restart: the household and token must still be there"
podman restart "$name" >/dev/null
wait_healthy
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/households/1/people")
say "after the restart, the same request: HTTP $code"
test "$code" = 200

say "podman stop (SIGTERM, 30 s grace)"
start=$(date +%s.%N)
podman stop -t 30 "$name" >/dev/null
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
exit_code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
say "stopped in ${elapsed} s with exit code $exit_code; last log lines:"
podman logs --tail 3 "$name" >&2
test "$exit_code" = 0

say "a new container on the same volume: the household and token must still be there"
podman rm "$name" >/dev/null
podman run -d --name "$name" -p "127.0.0.1:$port:8080" -v "$volume:/data" "$image" >/dev/null
wait_healthy
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/households/1/people")
say "in the new container, the same request: HTTP $code"
test "$code" = 200
podman stop -t 30 "$name" >/dev/null
test "$(podman inspect --format '{{.State.ExitCode}}' "$name")" = 0

say "all checks passed (bases: $(podman image inspect --format '{{index .Labels "pillbox.stand-in"}}' "$RUST_IMAGE" | sed 's/<no value>/real/') / $(podman image inspect --format '{{index .Labels "pillbox.stand-in"}}' "$RUNTIME_IMAGE" | sed 's/<no value>/real/'))"
