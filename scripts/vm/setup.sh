#!/usr/bin/env bash
# scripts/vm/setup.sh — prepare everything needed to boot a throw-away Debian
# kernel under qemu and run a test binary in it (kernel SCTP mode, see
# scripts/vm/README.md and docs/kernel-sctp.md).
#
# Idempotent. Needs root (apt) the first time; later runs only check the cache.
# Network: the Debian apt mirror only.
#
# Produces, under $VMTEST_CACHE (default <repo>/.cache/vm):
#   vmlinuz            the kernel image
#   busybox            a static busybox (host side: used to build cpio archives)
#   base.cpio          initramfs base: busybox, /init, the SCTP modules
#   kernel.version     the kernel release, e.g. 6.1.0-56-cloud-amd64
#   ready              stamp written last; its presence means the cache is complete
#
# Environment:
#   VMTEST_CACHE          cache directory
#   VMTEST_KERNEL_FLAVOUR Debian kernel flavour meta-package suffix (default cloud-amd64)
#   VMTEST_FORCE=1        rebuild the cache even if it is complete
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${VMTEST_CACHE:-$repo/.cache/vm}"
flavour="${VMTEST_KERNEL_FLAVOUR:-cloud-amd64}"
# Modules loaded into the guest (SCTP; veth and netem for the multihoming
# failover test and the kernel-SCTP WAN runs, tun for their userspace
# emulator), with their dependencies resolved from .modinfo and loaded
# first.
want_modules=(sctp veth sch_netem tun)

log() { printf 'vm-setup: %s\n' "$*" >&2; }
die() { printf 'vm-setup: FATAL: %s\n' "$*" >&2; exit 1; }

# The base initramfs depends on this script and on init.sh: a change to
# either invalidates the cache.
fingerprint="$(cat "$here/setup.sh" "$here/init.sh" | sha256sum | cut -c1-16)"

if [[ "${VMTEST_FORCE:-0}" != 1 && -f "$cache/ready" ]] &&
	[[ "$(cat "$cache/ready")" == "$fingerprint" ]] &&
	command -v qemu-system-x86_64 >/dev/null; then
	exit 0
fi

mkdir -p "$cache"
# One setup at a time (parallel test binaries may all call run.sh).
exec 9>"$cache/.lock"
flock 9
if [[ "${VMTEST_FORCE:-0}" != 1 && -f "$cache/ready" ]] &&
	[[ "$(cat "$cache/ready")" == "$fingerprint" ]] &&
	command -v qemu-system-x86_64 >/dev/null; then
	exit 0
fi
rm -f "$cache/ready"

# shellcheck source=../lib/apt.sh
. "$here/../lib/apt.sh"
apt_update() {
	log "apt-get update"
	apt_update_once || die "apt-get update failed"
}

# 1. qemu on the host.
if ! command -v qemu-system-x86_64 >/dev/null; then
	[[ $(id -u) == 0 ]] || die "qemu-system-x86_64 missing and not root: install qemu-system-x86"
	apt_update
	log "installing qemu-system-x86"
	mkdir -p "$cache"
	apt_get install -y -qq --no-install-recommends \
		-o Dpkg::Use-Pty=0 qemu-system-x86 >"$cache/apt-install.log" 2>&1 || {
		tail -n 30 "$cache/apt-install.log" >&2
		die "apt-get install qemu-system-x86 failed (log: $cache/apt-install.log)"
	}
fi

# 2. The kernel and busybox packages, downloaded (never installed on the host).
# The security archive keeps only the newest ABI, so the versioned package
# name is resolved through the meta-package, never hard-coded.
resolve_kernel_pkg() {
	apt-cache depends "linux-image-$flavour" 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}
kpkg="$(resolve_kernel_pkg)"
if [[ -z "$kpkg" ]]; then
	apt_update
	kpkg="$(resolve_kernel_pkg)"
fi
[[ -n "$kpkg" ]] || die "cannot resolve the package behind linux-image-$flavour"
log "kernel package $kpkg"

debs="$cache/debs"
mkdir -p "$debs"
download() { # package -> path of the .deb in $debs
	local pkg="$1" f
	f="$(ls "$debs/${pkg}"_*.deb 2>/dev/null | head -n1 || true)"
	if [[ -z "$f" ]]; then
		log "downloading $pkg"
		# As root the download cannot be sandboxed as _apt in this directory.
		(cd "$debs" && apt_get download -qq -o APT::Sandbox::User=root "$pkg" >&2) || {
			apt_update
			(cd "$debs" && apt_get download -qq -o APT::Sandbox::User=root "$pkg" >&2) ||
				die "apt-get download $pkg failed"
		}
		f="$(ls "$debs/${pkg}"_*.deb | head -n1)"
	fi
	printf '%s\n' "$f"
}
kdeb="$(download "$kpkg")"
bdeb="$(download busybox-static)"

work="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "extracting $(basename "$kdeb")"
dpkg-deb -x "$kdeb" "$work/kernel"
dpkg-deb -x "$bdeb" "$work/busybox"

kver="${kpkg#linux-image-}"
vmlinuz="$work/kernel/boot/vmlinuz-$kver"
[[ -f "$vmlinuz" ]] || die "no /boot/vmlinuz-$kver in $kdeb"
moddir="$work/kernel/lib/modules/$kver"
[[ -d "$moddir" ]] || die "no /lib/modules/$kver in $kdeb"
bb="$work/busybox/bin/busybox"
[[ -x "$bb" ]] || die "no /bin/busybox in $bdeb"

# 3. Modules in dependency order (depth first: dependencies before users).
find_module() { # name -> path (names use - and _ interchangeably)
	local n="$1" alt
	alt="$(printf '%s' "$n" | tr '_-' '-_')"
	find "$moddir" \( -name "$n.ko" -o -name "$n.ko.xz" -o -name "$n.ko.zst" \
		-o -name "$alt.ko" -o -name "$alt.ko.xz" -o -name "$alt.ko.zst" \) -print -quit
}
module_plain() { # path -> uncompressed module in $work/mods
	local p="$1" base
	base="$(basename "$p")"
	base="${base%.xz}"
	base="${base%.zst}"
	case "$p" in
	*.xz) xz -dc "$p" >"$work/mods/$base" ;;
	*.zst) zstd -qdc "$p" >"$work/mods/$base" ;;
	*) cp "$p" "$work/mods/$base" ;;
	esac
	printf '%s\n' "$work/mods/$base"
}
mkdir -p "$work/mods"
order=()
declare -A seen=()
visit() {
	local name="$1" path plain deps d
	[[ -n "${seen[$name]:-}" ]] && return 0
	seen[$name]=1
	path="$(find_module "$name")"
	[[ -n "$path" ]] || die "module $name not found under $moddir (built in?)"
	plain="$(module_plain "$path")"
	# .modinfo is a list of NUL-terminated key=value strings.
	deps="$(tr '\0' '\n' <"$plain" | sed -n 's/^depends=//p' | head -n1)"
	local IFS=,
	for d in $deps; do
		[[ -n "$d" ]] && visit "$d"
	done
	order+=("$(basename "$plain")")
}
for m in "${want_modules[@]}"; do visit "$m"; done
log "modules: ${order[*]}"

# 4. The base initramfs: busybox, /init, modules. newc, uncompressed (the
# kernel unpacks concatenated archives; run.sh appends a per-run one).
root="$work/root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,lib/modules,test}
cp "$bb" "$root/bin/busybox"
for m in "${order[@]}"; do cp "$work/mods/$m" "$root/lib/modules/$m"; done
printf '%s\n' "${order[@]}" >"$root/etc/vmtest-modules"
printf '%s\n' "$kver" >"$root/etc/vmtest-kernel"
cp "$here/init.sh" "$root/init"
chmod 0755 "$root/init" "$root/bin/busybox"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | "$bb" cpio -o -H newc 2>/dev/null) >"$work/base.cpio"

# 5. Publish atomically.
cp "$bb" "$cache/busybox.new" && mv "$cache/busybox.new" "$cache/busybox"
cp "$vmlinuz" "$cache/vmlinuz.new" && mv "$cache/vmlinuz.new" "$cache/vmlinuz"
mv "$work/base.cpio" "$cache/base.cpio"
printf '%s\n' "$kver" >"$cache/kernel.version"
printf '%s\n' "$fingerprint" >"$cache/ready"
log "ready: $cache (kernel $kver)"
