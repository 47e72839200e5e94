#!/usr/bin/env bash
# scripts/vm/run.sh — run one binary inside a throw-away qemu VM that boots
# Debian's kernel with SCTP loaded (see scripts/vm/README.md).
#
# usage: run.sh [options] BINARY [ARGS...]
#   --sysctl KEY=VALUE   set a sysctl in the guest before BINARY runs (repeatable)
#   --env NAME=VALUE     export a variable to BINARY (repeatable)
#   --include SRC=DST    copy file or directory SRC to DST in the guest (repeatable)
#   --cwd DIR            working directory of BINARY in the guest (default /test)
#   --timeout SECONDS    hard limit for the whole VM run (default $VMTEST_TIMEOUT or 600)
#
# The guest sees SCTPRDMA_IN_VM=1. BINARY's output appears on stdout (serial
# console). The exit status is BINARY's, read from the "VMTEST-EXIT=<n>" marker
# the guest prints; 124 if the hard timeout expired, 125 if the guest failed
# before or around BINARY (no marker, module load failure).
# A dynamically linked BINARY (e.g. built with -race) gets its shared
# libraries copied into the guest at the same paths.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${VMTEST_CACHE:-$repo/.cache/vm}"
timeout_s="${VMTEST_TIMEOUT:-600}"

sysctls=() envs=() includes=() cwd=/test
while [[ $# -gt 0 ]]; do
	case "$1" in
	--sysctl) sysctls+=("$2"); shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--include) includes+=("$2"); shift 2 ;;
	--cwd) cwd="$2"; shift 2 ;;
	--timeout) timeout_s="$2"; shift 2 ;;
	--) shift; break ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || { echo "usage: run.sh [options] BINARY [ARGS...]" >&2; exit 2; }
bin="$1"; shift
[[ -f "$bin" && -x "$bin" ]] || { echo "run.sh: $bin is not an executable file" >&2; exit 2; }

"$here/setup.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/vmtest.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/test"
name="$(basename "$bin")"
cp "$bin" "$root/test/$name"

# Shared libraries of a dynamic binary, at their host paths.
if [[ "$(head -c 4 "$bin" | od -An -c | tr -d ' ')" == '177ELF' ]] &&
	readelf -l "$bin" 2>/dev/null | grep -q 'program interpreter'; then
	while read -r lib; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done < <(ldd "$bin" | grep -o '/[^ ]*' | sort -u)
fi

for inc in "${includes[@]}"; do
	src="${inc%%=*}" dst="${inc#*=}"
	mkdir -p "$root$(dirname "$dst")"
	cp -a "$src" "$root$dst"
done

quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
{
	for e in "${envs[@]}"; do printf 'export %s\n' "$(quote "$e")"; done
	printf 'mkdir -p %s && cd %s || exit 125\n' "$(quote "$cwd")" "$(quote "$cwd")"
	printf 'exec %s' "$(quote "/test/$name")"
	for a in "$@"; do printf ' %s' "$(quote "$a")"; done
	printf '\n'
} >"$root/test/run"
if [[ ${#sysctls[@]} -gt 0 ]]; then printf '%s\n' "${sysctls[@]}" >"$root/test/sysctl"; fi

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | "$cache/busybox" cpio -o -H newc 2>/dev/null) >"$work/run.cpio"
cat "$cache/base.cpio" "$work/run.cpio" >"$work/initrd"

smp="${VMTEST_SMP:-2}" mem="${VMTEST_MEM:-1024}"
log="$work/console.log"
start=$(date +%s.%N)
echo "run.sh: starting the VM (${smp} vCPUs, ${mem} MiB, TCG)" >&2
set +e
# The console goes through an unbuffered filter (sed -u): a buffering one
# (tr) held the guest's first lines, its boot marker among them, until 4 KiB
# had accumulated, so a long run with little output looked hung in early
# boot to vmtest's BootWait watchdog, which killed it.
# no_timer_check: under TCG on a loaded host the emulated CPU can be too
# slow for the kernel's IO-APIC timer check, which then panics at boot
# ("IO-APIC + timer doesn't work!"); the check is for broken hardware.
timeout -k 5 "$timeout_s" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max -m "$mem" -smp "$smp" \
	-nodefaults -no-reboot -display none -serial stdio -monitor none \
	-kernel "$cache/vmlinuz" -initrd "$work/initrd" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 oops=panic no_timer_check" \
	</dev/null 2>&1 | sed -u 's/\r$//' | tee "$log"
status=("${PIPESTATUS[@]}")
set -e
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')

if [[ ${status[0]} == 124 || ${status[0]} == 137 ]]; then
	echo "run.sh: VM hard timeout after ${timeout_s}s" >&2
	exit 124
fi
marker="$(grep -a -o '^VMTEST-EXIT=[0-9]*' "$log" | tail -n1 || true)"
if [[ -z "$marker" ]]; then
	echo "run.sh: the guest printed no VMTEST-EXIT marker (qemu status ${status[0]}, ${elapsed}s)" >&2
	exit 125
fi
rc="${marker#VMTEST-EXIT=}"
echo "run.sh: guest exit status $rc, VM wall time ${elapsed}s" >&2
exit "$rc"
