#!/usr/bin/env bash
# Builds the .deb with cargo deb from the binary `cargo build` already made
# (no release build: the debug binary stands in for it through a scratch
# CARGO_TARGET_DIR) and checks what the package holds. Run by .ci/run when
# cargo-deb is installed; needs dpkg-deb.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "check-deb.sh: $*" >&2
    exit 1
}

[[ -x target/debug/pillbox ]] || cargo build --locked
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/target/release"
ln -s "$PWD/target/debug/pillbox" "$scratch/target/release/pillbox"

CARGO_TARGET_DIR="$scratch/target" cargo deb --no-build --no-strip --fast \
    --output "$scratch/" > "$scratch/cargo-deb.out"
deb=$(tail -n 1 "$scratch/cargo-deb.out")
[[ -f $deb ]] || fail "cargo deb made no package: $(cat "$scratch/cargo-deb.out")"

contents=$(dpkg-deb --contents "$deb")
for entry in "-rwxr-xr-x .* ./usr/bin/pillbox$" \
    "-rw-r--r-- .* ./usr/lib/systemd/system/pillbox.service$" \
    "-rw-r--r-- .* ./etc/default/pillbox$" \
    "./usr/share/doc/pillbox/README.md$"; do
    grep -Eq -- "$entry" <<<"$contents" || fail "no $entry in the package: $contents"
done

[[ $(dpkg-deb --field "$deb" Package) == pillbox ]] || fail "package name"
grep -q passwd <<<"$(dpkg-deb --field "$deb" Depends)" || fail "Depends lacks passwd (useradd)"

dpkg-deb --control "$deb" "$scratch/control"
grep -qx /etc/default/pillbox "$scratch/control/conffiles" || fail "/etc/default/pillbox is not a conffile"
grep -q "useradd --system" "$scratch/control/postinst" || fail "postinst makes no pillbox user"
grep -q "install -d -o pillbox -g pillbox -m 0700 /var/lib/pillbox" "$scratch/control/postinst" ||
    fail "postinst makes no /var/lib/pillbox"
grep -q "deb-systemd-helper enable pillbox.service" "$scratch/control/postinst" ||
    fail "postinst does not enable the unit"

dpkg-deb --extract "$deb" "$scratch/root"
cmp -s "$scratch/root/usr/lib/systemd/system/pillbox.service" packaging/debian/pillbox.service ||
    fail "the unit in the package is not packaging/debian/pillbox.service"
grep -q "^ExecStart=/usr/bin/pillbox serve$" "$scratch/root/usr/lib/systemd/system/pillbox.service" ||
    fail "the unit does not start /usr/bin/pillbox"
"$scratch/root/usr/bin/pillbox" version >/dev/null || fail "the packaged binary does not run"

echo "check-deb.sh: $(basename "$deb") holds the binary, the unit, /etc/default/pillbox and a postinst making the pillbox user and /var/lib/pillbox" >&2
