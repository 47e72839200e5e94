#!/bin/sh
# scripts/vm/siw-guest.sh — runs inside the test VM (as the BINARY of
# run.sh, see siw-run.sh): loads the RDMA modules and siw from /siw,
# installs rdma-core's tools, attaches siw0 to dummy0 (10.0.0.1/24: siw
# needs an interface with a real MAC, RDMA CM cannot resolve addresses on
# lo; traffic still flows over lo), then execs PROGRAM [ARGS...].
# usage: siw-guest.sh PROGRAM [ARGS...]
set -e
cp -a /siw/root/. /
for m in $(cat /siw/modules.order); do
	name="${m%.ko}"
	[ -d "/sys/module/$(echo "$name" | tr - _)" ] && continue
	insmod "/siw/modules/$m" || { echo "siw-guest: insmod $m failed"; exit 125; }
done
/usr/sbin/ip link set lo up
/usr/sbin/ip link show dummy0 >/dev/null 2>&1 || /usr/sbin/ip link add dummy0 type dummy
/usr/sbin/ip addr add 10.0.0.1/24 dev dummy0
/usr/sbin/ip link set dummy0 up
/usr/bin/rdma link add siw0 type siw netdev dummy0 || { echo "siw-guest: rdma link add failed"; exit 125; }
/usr/bin/rdma link show
export SIW_GUEST=1 SIW_ADDR=10.0.0.1 PATH=/usr/sbin:/usr/bin:/sbin:/bin
exec "$@"
