#!/usr/bin/env bash
# scripts/vm/siw-setup.sh — prepare Linux siw (Soft-iWARP) and rdma-core's
# tools for the throw-away test VM of scripts/vm (see
# docs/siw-interop.md, scripts/vm/README.md).
#
# Debian's kernels do not ship siw (CONFIG_RDMA_SIW is unset), so siw.ko is
# built out of tree ON THE HOST from Debian's linux-source-6.1, against the
# linux-headers of exactly the kernel the VM boots (the one setup.sh
# resolved), with the host's gcc-12 (the kernel's compiler). The source is
# upstream siw with three compile-time constants exposed as module
# parameters (as siw had them before v5.3): mpa_version, peer_to_peer and
# mpa_crc_required, so one module can act as an MPA revision 1 or 2,
# client-server or peer-to-peer, CRC or no-CRC Initiator.
#
# Idempotent, cached under $SIW_CACHE (default <repo>/.cache/siw): a stamp
# holding a hash of this script and the kernel release means
# the cache is complete. Needs root the first time (apt-get install of
# linux-headers, rdmacm-utils, perftest, ibverbs-providers, ibverbs-utils,
# iproute2; apt-get download of linux-source-6.1). SIW_FORCE=1 rebuilds.
#
# Produces $SIW_CACHE/guest/, copied into the guest at /siw by
# siw-run.sh:
#   modules/*.ko, modules.order   RDMA core modules (from the VM kernel's
#                                 package) + siw.ko, in load order
#   root/                         rdma-core tools and their libraries at
#                                 their host paths, provider config
#   versions                      what was built from what
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/apt.sh
. "$here/../lib/apt.sh"
repo="$(cd "$here/../.." && pwd)"
vmcache="${VMTEST_CACHE:-$repo/.cache/vm}"
cache="${SIW_CACHE:-$repo/.cache/siw}"

log() { printf 'siw-setup: %s\n' "$*" >&2; }
die() { printf 'siw-setup: FATAL: %s\n' "$*" >&2; exit 1; }

# The kernel the VM boots (and its module package).
"$here/setup.sh"
kver="$(cat "$vmcache/kernel.version")"
kdeb="$(ls "$vmcache/debs/linux-image-${kver}"_*.deb | head -n1)"
[[ -f "$kdeb" ]] || die "no linux-image-$kver .deb in $vmcache/debs"

fingerprint="$(sha256sum <"$here/siw-setup.sh" | cut -c1-16)-$kver"
ready() { [[ "${SIW_FORCE:-0}" != 1 && -f "$cache/ready" && "$(cat "$cache/ready")" == "$fingerprint" ]]; }
ready && exit 0
mkdir -p "$cache"
exec 8>"$cache/.lock"
flock 8
ready && exit 0
rm -f "$cache/ready"
start=$(date +%s)

# 1. Host packages: headers of the VM kernel, the tools copied into the VM.
kpkgver="$(dpkg-deb -f "$kdeb" Version)"
pkgs=("linux-headers-$kver" gcc-12 make rdmacm-utils perftest ibverbs-providers ibverbs-utils iproute2)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	[[ $(id -u) == 0 ]] || die "missing packages ${missing[*]} and not root"
	log "installing ${missing[*]}"
	apt_get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 \
		"${missing[@]}" >"$cache/apt-install.log" 2>&1 || {
		log "apt-get update"
		apt_update_once
		apt_get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 \
			"${missing[@]}" >"$cache/apt-install.log" 2>&1 || {
			tail -n 30 "$cache/apt-install.log" >&2
			die "apt-get install failed (log $cache/apt-install.log)"
		}
	}
fi
command -v gcc-12 >/dev/null || die "gcc-12 (the kernel's compiler) is not installed"

# 2. siw sources: linux-source-6.1 of the same Debian version as the kernel.
mkdir -p "$cache/debs"
srcdeb="$(ls "$cache/debs/linux-source-6.1_${kpkgver}"_all.deb 2>/dev/null | head -n1 || true)"
if [[ -z "$srcdeb" ]]; then
	log "downloading linux-source-6.1=$kpkgver"
	(cd "$cache/debs" && apt_get download -qq -o APT::Sandbox::User=root "linux-source-6.1=$kpkgver" >&2) || {
		apt_update_once
		(cd "$cache/debs" && apt_get download -qq -o APT::Sandbox::User=root "linux-source-6.1=$kpkgver" >&2) ||
			die "apt-get download linux-source-6.1=$kpkgver failed"
	}
	srcdeb="$(ls "$cache/debs/linux-source-6.1_${kpkgver}"_all.deb | head -n1)"
fi

work="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "unpacking drivers/infiniband/sw/siw from $(basename "$srcdeb")"
dpkg-deb --fsys-tarfile "$srcdeb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
	tar -xJ -C "$work" --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*'
src="$work/linux-source-6.1/drivers/infiniband/sw/siw"
[[ -f "$src/siw_main.c" ]] || die "siw sources not found in linux-source-6.1"

# 3. Build siw.ko out of tree. Expose the constants as module parameters.
sed -i 's/^obj-\$(CONFIG_RDMA_SIW)/obj-m/' "$src/Makefile"
sed -i -e 's/^u_char mpa_version = MPA_REVISION_2;$/&\nmodule_param(mpa_version, byte, 0644);/' \
	-e 's/^const bool peer_to_peer;$/bool peer_to_peer;\nmodule_param(peer_to_peer, bool, 0644);/' \
	-e 's/^const bool mpa_crc_required;$/bool mpa_crc_required;\nmodule_param(mpa_crc_required, bool, 0644);/' \
	"$src/siw_main.c"
sed -i -e 's/^extern const bool peer_to_peer;$/extern bool peer_to_peer;/' \
	-e 's/^extern const bool mpa_crc_required;$/extern bool mpa_crc_required;/' "$src/siw.h"
[[ $(grep -c '^module_param(' "$src/siw_main.c") == 3 ]] || die "patching siw module parameters failed"
log "building siw.ko against /lib/modules/$kver/build"
make -s -C "/lib/modules/$kver/build" M="$src" CC=gcc-12 modules >"$work/build.log" 2>&1 || {
	tail -n 30 "$work/build.log" >&2
	die "building siw.ko failed"
}

# 4. RDMA core modules of the VM kernel, dependencies first (.modinfo).
guest="$work/guest"
mkdir -p "$guest/modules" "$guest/root"
dpkg-deb -x "$kdeb" "$work/kernel"
moddir="$work/kernel/lib/modules/$kver"
find_module() {
	local n="$1" alt
	alt="$(printf '%s' "$n" | tr '_-' '-_')"
	find "$moddir" \( -name "$n.ko" -o -name "$n.ko.xz" -o -name "$alt.ko" -o -name "$alt.ko.xz" \) -print -quit
}
order=()
declare -A seen=()
visit() {
	local name="$1" path plain deps d base
	[[ -n "${seen[$name]:-}" ]] && return 0
	seen[$name]=1
	if [[ "$name" == siw ]]; then
		plain="$src/siw.ko"
	else
		path="$(find_module "$name")"
		if [[ -z "$path" ]]; then
			log "module $name not in the package (built in?): skipped"
			return 0
		fi
		base="$(basename "$path")"
		base="${base%.xz}"
		plain="$guest/modules/$base"
		case "$path" in *.xz) xz -dc "$path" >"$plain" ;; *) cp "$path" "$plain" ;; esac
	fi
	deps="$(tr '\0' '\n' <"$plain" | sed -n 's/^depends=//p' | head -n1)"
	local IFS=,
	for d in $deps; do [[ -n "$d" ]] && visit "$d"; done
	[[ "$name" == siw ]] && cp "$plain" "$guest/modules/siw.ko"
	order+=("$(basename "$plain")")
}
# crc32c_generic first: nothing declares it, and siw's crypto lookup of
# "crc32c" fails without it (siw-vm.md).
for m in crc32c_generic siw ib_uverbs rdma_ucm dummy; do visit "$m"; done
printf '%s\n' "${order[@]}" >"$guest/modules.order"
log "modules: ${order[*]}"

# 5. rdma-core tools with their libraries (ldd misses libgcc_s, which glibc
# opens for pthread_exit), the siw provider and its driver file.
bins=(/usr/bin/rping /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw
	/usr/bin/ibv_devices /usr/bin/rdma /usr/sbin/ip)
copy() { mkdir -p "$guest/root$(dirname "$1")" && cp -L "$1" "$guest/root$1"; }
libs=()
for b in "${bins[@]}" /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so; do
	[[ -e "$b" ]] || die "$b missing on the host"
	copy "$b"
	while read -r l; do libs+=("$l"); done < <(ldd "$b" | grep -o '/[^ ]*' | sort -u)
done
for l in $(printf '%s\n' "${libs[@]}" | sort -u) /lib/x86_64-linux-gnu/libgcc_s.so.1; do copy "$l"; done
copy /etc/libibverbs.d/siw.driver
mkdir -p "$guest/root/etc"
printf 'root:x:0:0:root:/tmp:/bin/sh\n' >"$guest/root/etc/passwd"
printf 'root:x:0:\n' >"$guest/root/etc/group"
{
	echo "kernel $kver ($kpkgver)"
	echo "siw from linux-source-6.1 $kpkgver, gcc $(gcc-12 -dumpfullversion)"
	dpkg-query -W -f='${Package} ${Version}\n' rdmacm-utils perftest ibverbs-providers
} >"$guest/versions"

rm -rf "$cache/guest"
mv "$guest" "$cache/guest"
printf '%s\n' "$fingerprint" >"$cache/ready"
log "ready: $cache/guest in $(($(date +%s) - start))s"
