#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each.
# Usage: scripts/fuzz-all.sh [DURATION]   (default 60s)
#
# A run that fails only with "context deadline exceeded" and wrote no
# failing input is the fuzzing engine's own race at the deadline (seen with
# very short -fuzztime on a loaded host), not a finding: it is run again,
# up to twice (one retry was not always enough: FuzzOutstandingSACK, whose
# executions take about a millisecond, hit it twice in a row in a CI run
# of 2026-11-27). Any crasher fails the script; it is written to testdata/fuzz/ by
# go test, to be committed with its fix.
set -euo pipefail
dur=${1:-60s}
cd "$(dirname "$0")/.."
fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for t in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    for try in 1 2 3; do
      echo "== $pkg $t ($dur)"
      if go test -run='^$' -fuzz="^${t}\$" -fuzztime="$dur" "$pkg" 2>&1 | tee "$log"; then
        break
      fi
      if [[ $try -lt 3 ]] && grep -q "context deadline exceeded" "$log" && ! grep -q "Failing input written" "$log"; then
        echo "== $pkg $t: the engine hit its own deadline race; once more"
        continue
      fi
      fail=1
      break
    done
  done
done
exit $fail
