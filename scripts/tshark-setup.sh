#!/usr/bin/env bash
# scripts/tshark-setup.sh — install Debian's tshark (Wireshark's decoder),
# which the decode tests of interop/wireshark (MPA, and DDP over SCTP with
# the project's dissector in wireshark/) run over our captured traffic. Idempotent: does nothing when tshark is on PATH. Needs root (or
# an installed tshark) the first time. Safe to run while other test packages
# install their own packages: every apt call goes through scripts/lib/apt.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v tshark >/dev/null && exit 0
[[ $(id -u) == 0 ]] || { echo "tshark-setup: tshark missing and not root" >&2; exit 1; }
# shellcheck source=lib/apt.sh
. "$here/lib/apt.sh"
log="$(mktemp "${TMPDIR:-/tmp}/tshark-apt.XXXXXX")"
trap 'rm -f "$log"' EXIT
# wireshark-common asks whether non-root users may capture: answer no,
# without a prompt.
apt_locked sh -c 'echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections'
apt_install() { apt_get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 tshark >"$log" 2>&1; }
apt_install || { apt_update_once && apt_install; } || { tail -n 30 "$log" >&2; exit 1; }
command -v tshark >/dev/null
