#!/bin/bash
# A compute node as a deployer leaves it, under one directory: OVS-DPDK (Debian's openvswitch-switch-dpdk) with
# two netdev bridges as on a Neutron node, and a VNF (dpdk-testpmd, MAC forwarding) on two vhost-user ports.
#
#   lab.sh start DIR   deploys it and writes DIR/lab.json (sockets, pids, MACs, bridges, ports)
#   lab.sh stop DIR    stops what start started; safe to call twice
#   lab.sh restart-ovs DIR   ovs-vswitchd ended and started again as start starts it (its database kept), the
#                            way a node's service manager restarts OVS (zeroloss events' ovs-restart)
#   lab.sh restart-vnf DIR   the VNF ended and started again as start starts it (zeroloss events' vnf-restart)
#
#   br-phy: nic0 (tag 100), nic1 (tag 101)   vhost-user clients of DIR/nic0.sock, DIR/nic1.sock: the "NICs";
#                                            the traffic generator serves those sockets (net_virtio_user server=1)
#           patch-int  <->  patch-phy (trunk)
#   br-int: vhu0 (tag 100), vhu1 (tag 101)   vhost-user clients of DIR/vhu0.sock, DIR/vhu1.sock, served by the VNF
#
# Memory: OVS 1024 MB and the VNF 256 MB of hugepages. Cores: OVS's PMD and the VNF's forwarding lcore on core 0,
# the VNF's main lcore on core 1. Every OVS tool finds this lab through OVS_RUNDIR=DIR/run.
set -u

VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
SCHEMA=/usr/share/openvswitch/vswitch.ovsschema
RUNTIME=/var/run/dpdk
OVS_MB=1024
VNF_MB=256
GEN_MACS=(02:00:00:00:00:0a 02:00:00:00:00:0b)
VNF_MACS=(02:00:00:00:10:00 02:00:00:00:10:01)
READY_S=60
START_LOCK=/run/lock/zl-lab-start.lock

die() {
	echo "lab.sh: $*" >&2
	exit 1
}

usage() {
	echo "usage: lab.sh start|stop DIR" >&2
	exit 2
}

# The pid in a pid file when that process is alive and one of this lab's (its command line names DIR).
lab_pid() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$DIR/" || return 1
	echo "$pid"
}

# True while process $1 runs (a zombie waiting for init to reap it has ended).
alive() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# Waits up to $2 seconds for process $1 to end.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# Ends process $1: SIGTERM, then SIGKILL after 5 s.
end_process() {
	kill -TERM "$1" 2>/dev/null
	wait_gone "$1" 5 && return 0
	kill -KILL "$1" 2>/dev/null
	wait_gone "$1" 5
}

# ovs-vsctl on this lab's database; its complaint, if any, is kept for the failure message (vsctl_error).
vsctl() {
	ovs-vsctl --db="unix:$RUN/db.sock" --timeout=30 "$@" 2>"$DIR/ovs-vsctl.err"
}

vsctl_error() {
	tail -n 1 "$DIR/ovs-vsctl.err" 2>/dev/null
}

stop_lab() {
	local pid ok=0
	if pid=$(lab_pid "$DIR/vnf.pid"); then
		end_process "$pid" || { echo "lab.sh: the VNF (pid $pid) does not end" >&2; ok=1; }
	fi
	rm -f "$DIR/vnf.pid" "$DIR/vnf.stdin"
	if pid=$(lab_pid "$RUN/ovs-vswitchd.pid"); then
		# --cleanup: the bridges' and datapath's tap devices go too (persistent taps otherwise stay behind)
		timeout 10 ovs-appctl -t "$RUN/ovs-vswitchd.$pid.ctl" exit --cleanup >/dev/null 2>&1
		wait_gone "$pid" 10 || end_process "$pid" || { echo "lab.sh: ovs-vswitchd (pid $pid) does not end" >&2; ok=1; }
	fi
	rm -f "$RUN/ovs-vswitchd.pid"
	if pid=$(lab_pid "$RUN/ovsdb-server.pid"); then
		timeout 10 ovs-appctl -t "$RUN/ovsdb-server.$pid.ctl" exit >/dev/null 2>&1
		wait_gone "$pid" 10 || end_process "$pid" || { echo "lab.sh: ovsdb-server (pid $pid) does not end" >&2; ok=1; }
	fi
	rm -f "$RUN/ovsdb-server.pid" "$DIR/lab.json" "$DIR/ovs-vsctl.err"
	rm -rf "${RUNTIME:?}/$OVS_PREFIX" "${RUNTIME:?}/$VNF_PREFIX"
	return $ok
}

# A failed start: one line on stderr, then everything started so far is stopped.
fail() {
	echo "lab.sh: $*" >&2
	stop_lab
	exit 1
}

# Waits up to $2 seconds for command $1 to succeed while process $3 (if given) lives.
wait_for() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		eval "$1" && return 0
		[ -n "${3:-}" ] && ! alive "$3" && return 1
		sleep 0.1
	done
	return 1
}

# The last error in log $1, else the last line of file $2 (a daemon's stderr before it opened its log).
log_error() {
	local line
	line=$(grep -hE '\|(ERR|EMER)\||EAL: .*(fail|error|Cannot)' "$1" 2>/dev/null | tail -n 1 | sed 's/.*|//')
	[ -n "$line" ] || line=$(tail -n 1 "${2:-/dev/null}" 2>/dev/null | sed 's/.*|//')
	echo "${line:-no error logged}"
}

check_host() {
	local free_kb page_kb need_kb holder
	if lab_pid "$DIR/vnf.pid" >/dev/null || lab_pid "$RUN/ovs-vswitchd.pid" >/dev/null ||
		lab_pid "$RUN/ovsdb-server.pid" >/dev/null; then
		die "a lab is already running in $DIR: run 'lab.sh stop $DIR' first"
	fi
	for bin in "$VSWITCHD" ovsdb-server ovsdb-tool ovs-vsctl ovs-appctl dpdk-testpmd; do
		command -v "$bin" >/dev/null || die "$bin is missing (Debian packages openvswitch-switch-dpdk, dpdk)"
	done
	[ -r "$SCHEMA" ] || die "$SCHEMA is missing (Debian package openvswitch-common)"
	# a vhost-user socket path must fit in sun_path (108 bytes with its NUL)
	((${#DIR} <= 96)) || die "$DIR is too long for vhost-user socket paths: use a shorter directory"
	# the netdev datapath is a tap device named ovs-netdev, and each bridge one named after it: in one network
	# namespace only one userspace OVS at a time can hold them (a tun fd's fdinfo names its device)
	holder=$(grep -lE '^iff:[[:space:]]+(ovs-netdev|br-phy|br-int)$' /proc/[0-9]*/fdinfo/* 2>/dev/null | head -n 1)
	[ -z "$holder" ] || die "another OVS (pid $(cut -d/ -f3 <<<"$holder")) holds the tap devices ovs-netdev," \
		"br-phy or br-int: stop it first (one userspace OVS per network namespace)"
	free_kb=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
	page_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
	need_kb=$(((OVS_MB + VNF_MB) * 1024))
	((free_kb * page_kb >= need_kb)) || die "$((free_kb * page_kb / 1024)) MB of hugepages free, the lab needs" \
		"$((OVS_MB + VNF_MB)) MB: free some or reserve more (vm.nr_hugepages)"
}

start_ovs() {
	local pid
	# what a lab that crashed here left: its database, sockets and DPDK runtime folders (a stale telemetry socket
	# would look like a VNF that is up)
	rm -f "$DIR/conf.db" "$DIR"/*.sock "$RUN"/*
	rm -rf "${RUNTIME:?}/$OVS_PREFIX" "${RUNTIME:?}/$VNF_PREFIX"
	ovsdb-tool create "$DIR/conf.db" "$SCHEMA" 2>"$DIR/ovs-vsctl.err" ||
		fail "cannot create $DIR/conf.db: $(vsctl_error)"
	ovsdb-server "$DIR/conf.db" --remote="punix:$RUN/db.sock" --pidfile="$RUN/ovsdb-server.pid" --detach \
		--log-file="$DIR/ovsdb-server.log" 2>"$DIR/ovsdb-server.err" 9>&- ||
		fail "ovsdb-server did not start: $(log_error "$DIR/ovsdb-server.log" "$DIR/ovsdb-server.err")"
	vsctl --no-wait init || fail "ovsdb-server does not answer on $RUN/db.sock: $(vsctl_error)"
	vsctl --no-wait set Open_vSwitch . other_config:dpdk-init=true other_config:dpdk-socket-mem=$OVS_MB \
		other_config:dpdk-socket-limit=$OVS_MB other_config:dpdk-lcore-mask=0x1 other_config:pmd-cpu-mask=0x1 \
		other_config:dpdk-extra="--file-prefix=$OVS_PREFIX --in-memory --no-pci" ||
		fail "cannot configure OVS: $(vsctl_error)"
	start_vswitchd
}

start_vswitchd() {
	local pid
	# --detach returns once vswitchd has read its configuration, DPDK initialised. Started through a link named
	# ovs-vswitchd, as Debian's /usr/sbin/ovs-vswitchd is when the DPDK build is the chosen alternative: OVS names
	# its control socket after argv[0] (ovs-appctl's default target is ovs-vswitchd.<pid>.ctl) and the kernel
	# names the process after the file executed
	mkdir -p "$DIR/bin" && ln -sfn "$VSWITCHD" "$DIR/bin/ovs-vswitchd" || fail "cannot link $DIR/bin/ovs-vswitchd"
	timeout "$READY_S" "$DIR/bin/ovs-vswitchd" "unix:$RUN/db.sock" --pidfile="$RUN/ovs-vswitchd.pid" --detach \
		--log-file="$DIR/ovs-vswitchd.log" 2>"$DIR/ovs-vswitchd.err" 9>&- ||
		fail "ovs-vswitchd did not start: $(log_error "$DIR/ovs-vswitchd.log" "$DIR/ovs-vswitchd.err")"
	pid=$(lab_pid "$RUN/ovs-vswitchd.pid") || fail "ovs-vswitchd exited: $(log_error "$DIR/ovs-vswitchd.log")"
	wait_for "ovs-appctl -t $RUN/ovs-vswitchd.$pid.ctl version >/dev/null 2>&1" 10 "$pid" ||
		fail "ovs-vswitchd does not answer on $RUN/ovs-vswitchd.$pid.ctl"
	[ "$(vsctl get Open_vSwitch . dpdk_initialized)" = true ] ||
		fail "ovs-vswitchd did not initialise DPDK: $(log_error "$DIR/ovs-vswitchd.log") (log: $DIR/ovs-vswitchd.log)"
}

add_vhost_port() {
	vsctl add-port "$1" "$2" tag="$3" -- set Interface "$2" type=dpdkvhostuserclient \
		options:vhost-server-path="$DIR/$2.sock" || fail "cannot add port $2 to $1: $(vsctl_error)"
}

add_bridges() {
	vsctl add-br br-phy -- set Bridge br-phy datapath_type=netdev || fail "cannot add br-phy: $(vsctl_error)"
	vsctl add-br br-int -- set Bridge br-int datapath_type=netdev || fail "cannot add br-int: $(vsctl_error)"
	add_vhost_port br-phy nic0 100
	add_vhost_port br-phy nic1 101
	vsctl add-port br-phy patch-int -- set Interface patch-int type=patch options:peer=patch-phy \
		-- add-port br-int patch-phy -- set Interface patch-phy type=patch options:peer=patch-int ||
		fail "cannot add the patch ports: $(vsctl_error)"
	add_vhost_port br-int vhu0 100
	add_vhost_port br-int vhu1 101
}

# The VNF: testpmd forwarding vhu0 -> vhu1 towards side B's MAC and vhu1 -> vhu0 towards side A's. Without -i it
# forwards at once and then reads stdin until a line or EOF: a FIFO opened read-write never gives either.
start_vnf() {
	local pid
	rm -f "$DIR/vnf.stdin"
	mkfifo "$DIR/vnf.stdin" 2>/dev/null || fail "cannot create $DIR/vnf.stdin"
	setsid dpdk-testpmd -l 0,1 --main-lcore 1 --file-prefix "$VNF_PREFIX" --in-memory --single-file-segments \
		-m $VNF_MB --no-pci \
		--vdev "net_virtio_user0,path=$DIR/vhu0.sock,server=1,mac=${VNF_MACS[0]}" \
		--vdev "net_virtio_user1,path=$DIR/vhu1.sock,server=1,mac=${VNF_MACS[1]}" \
		-- --forward-mode=mac --eth-peer="0,${GEN_MACS[0]}" --eth-peer="1,${GEN_MACS[1]}" --auto-start \
		--total-num-mbufs=8192 \
		0<>"$DIR/vnf.stdin" >"$DIR/vnf.log" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$DIR/vnf.pid"
	wait_for "[ -S $RUNTIME/$VNF_PREFIX/dpdk_telemetry.v2 ]" "$READY_S" "$pid" ||
		fail "the VNF did not come up: $(log_error "$DIR/vnf.log") (log: $DIR/vnf.log)"
	for port in vhu0 vhu1; do
		wait_for "[ \"\$(vsctl get Interface $port link_state 2>/dev/null)\" = up ]" "$READY_S" "$pid" ||
			fail "OVS port $port did not connect to the VNF (logs: $DIR/ovs-vswitchd.log, $DIR/vnf.log)"
	done
}

write_facts() {
	local ovsdb vswitchd vnf
	vnf=$(lab_pid "$DIR/vnf.pid") || fail "the VNF exited (log: $DIR/vnf.log)"
	ovsdb=$(lab_pid "$RUN/ovsdb-server.pid") || fail "ovsdb-server exited (log: $DIR/ovsdb-server.log)"
	vswitchd=$(lab_pid "$RUN/ovs-vswitchd.pid") || fail "ovs-vswitchd exited (log: $DIR/ovs-vswitchd.log)"
	cat >"$DIR/lab.json.tmp" <<EOF
{
  "dir": "$DIR",
  "rundir": "$RUN",
  "db": "unix:$RUN/db.sock",
  "ovs_pids": [$ovsdb, $vswitchd],
  "ovs_file_prefix": "$OVS_PREFIX",
  "ovs_logs": ["$DIR/ovsdb-server.log", "$DIR/ovs-vswitchd.log"],
  "vnf_pid": $vnf,
  "vnf_telemetry": "$RUNTIME/$VNF_PREFIX/dpdk_telemetry.v2",
  "vnf_file_prefix": "$VNF_PREFIX",
  "vnf_log": "$DIR/vnf.log",
  "gen_macs": ["${GEN_MACS[0]}", "${GEN_MACS[1]}"],
  "vnf_macs": ["${VNF_MACS[0]}", "${VNF_MACS[1]}"],
  "gen_sockets": ["$DIR/nic0.sock", "$DIR/nic1.sock"],
  "vnf_sockets": ["$DIR/vhu0.sock", "$DIR/vhu1.sock"],
  "bridges": ["br-phy", "br-int"],
  "ports": {
    "nic0": {"bridge": "br-phy", "type": "dpdkvhostuserclient", "tag": 100, "socket": "$DIR/nic0.sock"},
    "nic1": {"bridge": "br-phy", "type": "dpdkvhostuserclient", "tag": 101, "socket": "$DIR/nic1.sock"},
    "patch-int": {"bridge": "br-phy", "type": "patch", "peer": "patch-phy"},
    "patch-phy": {"bridge": "br-int", "type": "patch", "peer": "patch-int"},
    "vhu0": {"bridge": "br-int", "type": "dpdkvhostuserclient", "tag": 100, "socket": "$DIR/vhu0.sock"},
    "vhu1": {"bridge": "br-int", "type": "dpdkvhostuserclient", "tag": 101, "socket": "$DIR/vhu1.sock"}
  }
}
EOF
	mv "$DIR/lab.json.tmp" "$DIR/lab.json"
}

[ $# -eq 2 ] || usage
[[ $2 =~ ^[A-Za-z0-9._/-]+$ ]] || die "'$2': a lab directory may contain only letters, digits and . _ - /"
DIR=$(realpath -m -- "$2")
RUN=$DIR/run
NAME=$(basename "$DIR")
OVS_PREFIX=zl-lab-$NAME
VNF_PREFIX=zl-lab-vnf-$NAME
export OVS_RUNDIR=$RUN OVS_LOGDIR=$DIR OVS_DBDIR=$DIR

case $1 in
start)
	[ "$(id -u)" = 0 ] || die "must run as root (hugepages, /var/run/dpdk)"
	mkdir -p "$RUN" || die "cannot create $RUN"
	# one start at a time on this host: a second lab started meanwhile would pass check_host before the first
	# holds its tap devices (the daemons do not inherit the lock's descriptor)
	exec 9>"$START_LOCK" && flock -w 120 9 || die "another lab.sh start holds $START_LOCK"
	check_host
	start_ovs
	add_bridges
	start_vnf
	write_facts
	;;
stop)
	[ -d "$DIR" ] || exit 0
	stop_lab || exit 1
	;;
restart-ovs)
	[ "$(id -u)" = 0 ] || die "must run as root (hugepages, /var/run/dpdk)"
	pid=$(lab_pid "$RUN/ovs-vswitchd.pid") || die "no ovs-vswitchd of this lab is running in $DIR"
	timeout 10 ovs-appctl -t "$RUN/ovs-vswitchd.$pid.ctl" exit --cleanup >/dev/null 2>&1
	wait_gone "$pid" 10 || end_process "$pid" || die "ovs-vswitchd (pid $pid) does not end"
	rm -f "$RUN/ovs-vswitchd.pid"
	start_vswitchd
	write_facts
	;;
restart-vnf)
	[ "$(id -u)" = 0 ] || die "must run as root (hugepages, /var/run/dpdk)"
	pid=$(lab_pid "$DIR/vnf.pid") || die "no VNF of this lab is running in $DIR"
	end_process "$pid" || die "the VNF (pid $pid) does not end"
	start_vnf
	write_facts
	;;
*)
	usage
	;;
esac
