#!/usr/bin/env bash
# bench-veth.sh: RDMA Write throughput of each LLP between two network
# namespaces of this host joined by a veth pair at an MTU of 1500 (a path
# like a real Ethernet one, where loopback's 64 KiB MTU hides the cost of
# one system call per packet). The LLPs run in turn, RUNS rounds, and the
# medians are printed with sctp-native's ratio to each of the others.
#
# Usage: scripts/bench-veth.sh   (root; make bench-veth)
# Environment: RUNS (5), DURATION (3s), SIZE (65536), DEPTH (16), MTU (1500),
# LLPS ("sctp-native mpa sctp-pion").
set -euo pipefail

RUNS=${RUNS:-5}
DURATION=${DURATION:-3s}
SIZE=${SIZE:-65536}
DEPTH=${DEPTH:-16}
MTU=${MTU:-1500}
LLPS=${LLPS:-"sctp-native mpa sctp-pion"}

if [ "$(id -u)" != 0 ]; then
	echo "bench-veth: needs root (network namespaces)" >&2
	exit 1
fi
command -v ip >/dev/null || { echo "bench-veth: needs ip (iproute2)" >&2; exit 1; }

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
a=srbA$$ b=srbB$$
cleanup() {
	ip netns pids "$a" 2>/dev/null | xargs -r kill 2>/dev/null || true
	ip netns del "$a" 2>/dev/null || true
	ip netns del "$b" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/sctp-rdma" ./cmd/sctp-rdma
bin=$tmp/sctp-rdma

ip netns add "$a"
ip netns add "$b"
ip link add "v$a" type veth peer name "v$b"
ip link set "v$a" netns "$a" mtu "$MTU"
ip link set "v$b" netns "$b" mtu "$MTU"
ip -n "$a" addr add 10.231.0.1/24 dev "v$a"
ip -n "$b" addr add 10.231.0.2/24 dev "v$b"
for n in "$a" "$b"; do
	ip -n "$n" link set lo up
done
ip -n "$a" link set "v$a" up
ip -n "$b" link set "v$b" up

# one LLP round: prints the forward Gbit/s of one bench run.
one() {
	local llp=$1 port=18600
	ip netns exec "$a" "$bin" serve --llp "$llp" --listen "10.231.0.1:$port" >"$tmp/serve.log" 2>&1 &
	local sp=$!
	local out=""
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.3
		if out=$(ip netns exec "$b" "$bin" bench --llp "$llp" --connect "10.231.0.1:$port" --size "$SIZE" \
			--depth "$DEPTH" --duration "$DURATION" --json write 2>"$tmp/bench.err"); then
			break
		fi
	done
	kill "$sp" 2>/dev/null || true
	wait "$sp" 2>/dev/null || true
	local g
	g=$(printf '%s\n' "$out" | grep -o '"gbps":[0-9.e+-]*' | head -1 | cut -d: -f2)
	if [ -z "$g" ]; then
		echo "bench-veth: $llp produced no figure:" >&2
		cat "$tmp/bench.err" "$tmp/serve.log" >&2
		exit 1
	fi
	echo "$g"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "RDMA Write ${SIZE} B, depth ${DEPTH}, ${DURATION} per run, MTU ${MTU} over veth, ${RUNS} rounds, GOGC=${GOGC:-100}, $(nproc) CPUs"
for r in $(seq "$RUNS"); do
	for llp in $LLPS; do
		g=$(one "$llp")
		echo "$g" >>"$tmp/$llp"
		printf 'round %d %-12s %8.2f Gbit/s\n' "$r" "$llp" "$g"
	done
done
echo
first=${LLPS%% *}
m1=$(median <"$tmp/$first")
for llp in $LLPS; do
	m=$(median <"$tmp/$llp")
	printf '%-12s median %8.2f Gbit/s   %s/%s %.2f\n' "$llp" "$m" "$first" "$llp" "$(awk -v x="$m1" -v y="$m" 'BEGIN{print x/y}')"
done
