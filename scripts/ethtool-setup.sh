#!/usr/bin/env bash
# scripts/ethtool-setup.sh — install Debian's ethtool, with which the veth
# benchmark (sctp-rdma harness --veth) turns GRO on and off on its veth pair
# and reads the offload settings back (ip link has no GRO switch).
# Idempotent: does nothing when ethtool is on PATH. Needs root the first
# time. Every apt call goes through scripts/lib/apt.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$PATH:/usr/sbin:/sbin"
command -v ethtool >/dev/null && exit 0
[[ $(id -u) == 0 ]] || { echo "ethtool-setup: ethtool missing and not root" >&2; exit 1; }
# shellcheck source=lib/apt.sh
. "$here/lib/apt.sh"
log="$(mktemp "${TMPDIR:-/tmp}/ethtool-apt.XXXXXX")"
trap 'rm -f "$log"' EXIT
apt_install() { apt_get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 ethtool >"$log" 2>&1; }
apt_install || { apt_update_once && apt_install; } || { tail -n 30 "$log" >&2; exit 1; }
command -v ethtool >/dev/null
