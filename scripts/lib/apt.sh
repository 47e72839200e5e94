# scripts/lib/apt.sh — sourced by every set-up script that installs or
# downloads Debian packages. Test packages run in parallel (go test runs one
# binary per package at once), and several of them may need apt at the same
# time: tshark for interop/wireshark, qemu for the VM tests, linux-source for
# siw. dpkg takes its lock without waiting, so two concurrent apt-get calls
# fail. Every apt call here therefore:
#   - takes the project's own lock (one apt call of this project at a time,
#     across clones: the lock lives in the system's lock directory), and
#   - waits for dpkg's and apt's locks held by anything else
#     (DPkg::Lock::Timeout, apt >= 1.9.11), for up to APT_LOCK_TIMEOUT seconds.
# apt_locked CMD...    any command that touches dpkg's state (debconf too),
#                      under the project's lock
# apt_get ARGS...      apt-get with both waits
# apt_update_once      apt-get update, at most once per calling script

APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-900}"

_apt_lockfile() {
	local d
	for d in /run/lock /var/lock "${TMPDIR:-/tmp}"; do
		if [[ -d $d && -w $d ]]; then
			printf '%s/sctp-rdma-apt.lock' "$d"
			return
		fi
	done
	printf '%s/sctp-rdma-apt.lock' "${TMPDIR:-/tmp}"
}

apt_locked() {
	local lock
	lock="$(_apt_lockfile)"
	(
		flock -w "$APT_LOCK_TIMEOUT" 7 || {
			echo "apt: waited ${APT_LOCK_TIMEOUT}s for $lock" >&2
			exit 1
		}
		"$@"
	) 7>"$lock"
}

apt_get() {
	apt_locked env DEBIAN_FRONTEND=noninteractive apt-get \
		-o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@"
}

_apt_updated=0
apt_update_once() {
	if [[ $_apt_updated == 0 ]]; then
		apt_get update -qq >&2 || return 1
		_apt_updated=1
	fi
}
