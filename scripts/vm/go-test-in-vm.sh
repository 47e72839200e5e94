#!/usr/bin/env bash
# scripts/vm/go-test-in-vm.sh — build a package's test binary and run it in
# the kernel-SCTP VM (the shell equivalent of internal/tools/vmtest.RunInVM, for
# Makefiles and by hand).
#
# usage: go-test-in-vm.sh [run.sh options] PACKAGE_DIR RUN_REGEX [TEST_BINARY_ARGS...]
#   e.g. scripts/vm/go-test-in-vm.sh ./sctpllp/kernel '^TestKernelSCTP$'
#        scripts/vm/go-test-in-vm.sh --sysctl net.sctp.udp_port=9899 ./sctpllp/kernel '^TestKernelSCTP$'
#        scripts/vm/go-test-in-vm.sh ./sctpllp/kernel '^$' -test.bench=BenchmarkKernel -test.benchmem
# VMTEST_RACE=1 builds with the race detector (its shared libraries are
# copied into the guest).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
opts=()
while [[ $# -gt 0 && "$1" == --* ]]; do opts+=("$1" "$2"); shift 2; done
[[ $# -ge 2 ]] || { sed -n '5,11p' "$0" >&2; exit 2; }
pkg="$1" run="$2"; shift 2
work="$(mktemp -d "${TMPDIR:-/tmp}/vmtest-bin.XXXXXX")"
trap 'rm -rf "$work"' EXIT
bin="$work/$(basename "$(cd "$pkg" && pwd)").test"
if [[ "${VMTEST_RACE:-0}" == 1 ]]; then
	(cd "$pkg" && CGO_ENABLED=1 go test -c -race -o "$bin" .)
else
	(cd "$pkg" && CGO_ENABLED=0 go test -c -o "$bin" .)
fi
if [[ -d "$pkg/testdata" ]]; then opts+=(--include "$(cd "$pkg" && pwd)/testdata=/test/pkg/testdata"); fi
[[ -n "${CI:-}" ]] && opts+=(--env "CI=$CI")
exec "$here/run.sh" "${opts[@]}" --cwd /test/pkg "$bin" -test.run "$run" -test.v -test.count=1 "$@"
