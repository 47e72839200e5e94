#!/usr/bin/env bash
# scripts/usrsctp-setup.sh — install Debian's usrsctp (libusrsctp-dev: the
# library and its headers, for the test peer of interop/usrsctp that the
# system compiler builds; libusrsctp-examples: its sample programs) and
# tshark (scripts/tshark-setup.sh), which decodes the captures. Idempotent:
# does nothing when the packages are installed. Needs root the first time.
# Safe to run while other test packages install their own packages: every
# apt call goes through scripts/lib/apt.sh (the project's flock, and
# dpkg's lock waited for).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pkgs=(libusrsctp-dev libusrsctp-examples)
installed() {
	local p
	for p in "${pkgs[@]}"; do
		[[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || return 1
	done
	command -v cc >/dev/null
}
if ! installed; then
	[[ $(id -u) == 0 ]] || { echo "usrsctp-setup: ${pkgs[*]} missing and not root" >&2; exit 1; }
	# shellcheck source=lib/apt.sh
	. "$here/lib/apt.sh"
	log="$(mktemp "${TMPDIR:-/tmp}/usrsctp-apt.XXXXXX")"
	trap 'rm -f "$log"' EXIT
	want=("${pkgs[@]}")
	command -v cc >/dev/null || want+=(gcc libc6-dev)
	apt_install() { apt_get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "${want[@]}" >"$log" 2>&1; }
	apt_install || { apt_update_once && apt_install; } || { tail -n 30 "$log" >&2; exit 1; }
	installed || { echo "usrsctp-setup: ${pkgs[*]} still not installed" >&2; exit 1; }
fi
"$here/tshark-setup.sh"
