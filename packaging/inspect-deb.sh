#!/usr/bin/env bash
# Inspects a release .deb with dpkg-deb --info and --contents and fails
# unless it is what packaging/README.md promises for that architecture:
#
#   packaging/inspect-deb.sh DEB ARCH [RUNNER...]
#   packaging/inspect-deb.sh dist/pillbox_0.1.0-1_arm64.deb arm64 qemu-aarch64-static
#
# ARCH is Debian's name (amd64, arm64, armhf). Checked: the Architecture
# field, Depends on passwd (useradd), a static binary of that machine at
# /usr/bin/pillbox (mode 0755) that runs `version` (under RUNNER if given),
# the hardened unit (packaging/debian/pillbox.service, unchanged, starting
# /usr/bin/pillbox), /etc/default/pillbox as a conffile, and a postinst that
# makes the pillbox system user and /var/lib/pillbox mode 0700 and enables
# the unit.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 2 ]]; then
    echo "usage: $0 DEB ARCH [RUNNER...]" >&2
    exit 2
fi
deb=$1
arch=$2
shift 2
runner=("$@")
case "$arch" in
    amd64) machine="x86-64" ;;
    arm64) machine="ARM aarch64" ;;
    armhf) machine="ARM, EABI5" ;;
    *)
        echo "inspect-deb.sh: unknown architecture $arch" >&2
        exit 2
        ;;
esac

fail() {
    echo "inspect-deb.sh: $(basename "$deb"): $*" >&2
    exit 1
}
[[ -f $deb ]] || fail "no such file"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "--- dpkg-deb --info $deb" >&2
dpkg-deb --info "$deb" >&2
echo "--- dpkg-deb --contents $deb" >&2
contents=$(dpkg-deb --contents "$deb")
echo "$contents" >&2

[[ $(dpkg-deb --field "$deb" Package) == pillbox ]] || fail "Package is not pillbox"
got=$(dpkg-deb --field "$deb" Architecture)
[[ $got == "$arch" ]] || fail "Architecture is $got, not $arch"
grep -q passwd <<<"$(dpkg-deb --field "$deb" Depends)" || fail "Depends lacks passwd (useradd)"

for entry in "-rwxr-xr-x .* ./usr/bin/pillbox$" \
    "-rw-r--r-- .* ./usr/lib/systemd/system/pillbox.service$" \
    "-rw-r--r-- .* ./etc/default/pillbox$" \
    "./usr/share/doc/pillbox/README.md$"; do
    grep -Eq -- "$entry" <<<"$contents" || fail "no $entry in the package"
done

dpkg-deb --control "$deb" "$scratch/control"
grep -qx /etc/default/pillbox "$scratch/control/conffiles" || fail "/etc/default/pillbox is not a conffile"
grep -q "useradd --system" "$scratch/control/postinst" || fail "postinst makes no pillbox user"
grep -q "install -d -o pillbox -g pillbox -m 0700 /var/lib/pillbox" "$scratch/control/postinst" ||
    fail "postinst makes no private /var/lib/pillbox"
grep -q "deb-systemd-helper enable pillbox.service" "$scratch/control/postinst" ||
    fail "postinst does not enable the unit"

dpkg-deb --extract "$deb" "$scratch/root"
unit=$scratch/root/usr/lib/systemd/system/pillbox.service
cmp -s "$unit" packaging/debian/pillbox.service || fail "the unit is not packaging/debian/pillbox.service"
grep -q "^ExecStart=/usr/bin/pillbox serve$" "$unit" || fail "the unit does not start /usr/bin/pillbox"
grep -q "^StateDirectoryMode=0700$" "$unit" || fail "the unit's state directory is not private"
grep -q "^User=pillbox$" "$unit" || fail "the unit does not run as pillbox"

bin=$scratch/root/usr/bin/pillbox
if command -v file >/dev/null; then
    described=$(file -b "$bin")
    [[ $described == *"$machine"* ]] || fail "/usr/bin/pillbox is not for $machine: $described"
    [[ $described == *static* ]] || fail "/usr/bin/pillbox is not static: $described"
fi
version=$("${runner[@]}" "$bin" version) || fail "/usr/bin/pillbox version failed"

echo "inspect-deb.sh: $(basename "$deb"): ok: Architecture $arch, /usr/bin/pillbox ($machine, static, $version)," \
    "the hardened unit, /etc/default/pillbox conffile, postinst makes the pillbox user and /var/lib/pillbox 0700"
