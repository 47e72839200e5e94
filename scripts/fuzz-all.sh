#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each.
# Usage: scripts/fuzz-all.sh [DURATION]   (default 60s)
set -euo pipefail
dur=${1:-60s}
cd "$(dirname "$0")/.."
fail=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for t in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $t ($dur)"
    if ! go test -run='^$' -fuzz="^${t}\$" -fuzztime="$dur" "$pkg"; then
      fail=1
    fi
  done
done
exit $fail
