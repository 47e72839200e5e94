#!/usr/bin/env bash
# scripts/tshark-setup.sh — install Debian's tshark (Wireshark's decoder),
# which the MPA decode test (interop/wireshark) runs over our captured
# traffic. Idempotent: does nothing when tshark is on PATH. Needs root (or
# an installed tshark) the first time.
set -euo pipefail
command -v tshark >/dev/null && exit 0
[[ $(id -u) == 0 ]] || { echo "tshark-setup: tshark missing and not root" >&2; exit 1; }
# wireshark-common asks whether non-root users may capture: answer no,
# without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
export DEBIAN_FRONTEND=noninteractive
apt_install() { apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 tshark >/tmp/tshark-apt.log 2>&1; }
apt_install || { apt-get update -qq && apt_install; } || { tail -n 30 /tmp/tshark-apt.log >&2; exit 1; }
command -v tshark >/dev/null
