#!/bin/busybox sh
# /init of the test VM's initramfs (installed by scripts/vm/setup.sh).
# Mounts the pseudo file systems, brings up lo, loads the SCTP modules in
# dependency order, applies /test/sysctl, runs /test/run (written by
# scripts/vm/run.sh), prints "VMTEST-EXIT=<status>" and powers off.
/bin/busybox mkdir -p /dev
/bin/busybox mount -t devtmpfs devtmpfs /dev
# Without this nothing reaches the serial console.
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

finish() {
	echo
	echo "VMTEST-EXIT=$1"
	sync
	poweroff -f
	sleep 10
}

echo "VMTEST-BOOTED uptime=$(cut -d' ' -f1 /proc/uptime)s kernel=$(uname -r)"
ip link set lo up || finish 125
for m in $(cat /etc/vmtest-modules); do
	insmod "/lib/modules/$m" || { echo "vmtest: insmod $m failed"; finish 125; }
done
if [ -f /test/sysctl ]; then
	while read -r kv; do
		[ -n "$kv" ] && { sysctl -w "$kv" >/dev/null || { echo "vmtest: sysctl $kv failed"; finish 125; }; }
	done </test/sysctl
fi
export SCTPRDMA_IN_VM=1 HOME=/tmp TMPDIR=/tmp
if [ ! -f /test/run ]; then
	echo "vmtest: no /test/run in the initramfs"
	finish 125
fi
sh /test/run
finish $?
