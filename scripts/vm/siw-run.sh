#!/usr/bin/env bash
# scripts/vm/siw-run.sh — run PROGRAM in the test VM with Linux siw and
# rdma-core's tools ready (siw0 on dummy0, 10.0.0.1): siw-setup.sh, then
# run.sh with the cached /siw tree and siw-guest.sh as the guest's program.
# usage: siw-run.sh [run.sh options] PROGRAM [ARGS...]
# PROGRAM is copied to /siw/bin/ in the guest (it must be static, like a
# CGO_ENABLED=0 Go test binary). The guest sees SIW_GUEST=1, SIW_ADDR.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${SIW_CACHE:-$repo/.cache/siw}"
opts=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--sysctl | --env | --include | --cwd | --timeout) opts+=("$1" "$2"); shift 2 ;;
	--) shift; break ;;
	-*) echo "siw-run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || { echo "usage: siw-run.sh [options] PROGRAM [ARGS...]" >&2; exit 2; }
prog="$1"; shift
"$here/siw-setup.sh"
exec "$here/run.sh" --include "$cache/guest=/siw" --include "$prog=/siw/bin/$(basename "$prog")" \
	"${opts[@]}" "$here/siw-guest.sh" "/siw/bin/$(basename "$prog")" "$@"
