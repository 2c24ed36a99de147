#!/bin/sh
# A real SLURM cluster on this one machine, for tests/test_slurm.py and for
# trying the fleet (profiles/slurm) by hand: Debian's munge, slurmctld and N
# slurmd, each slurmd a host of its own (MULTIPLE_SLURMD with its own node
# name and port, in a UTS namespace whose hostname is the node's name, so a
# job on node2 sees `hostname` = node2 and records it as its machine).
#
#   scripts/slurm-cluster.sh up [N]          install what is missing (apt-get), start munged,
#                                            slurmctld and slurmd node1..nodeN (default 2), wait
#                                            until sinfo shows every node idle; prints the pids
#   scripts/slurm-cluster.sh status          sinfo and the daemons' pids
#   scripts/slurm-cluster.sh kill-node NAME  the node dies: SIGKILL to its slurmd and every
#                                            process of its jobs (everything in its namespace)
#   scripts/slurm-cluster.sh start-node NAME its slurmd again (ReturnToService=2 takes it back)
#   scripts/slurm-cluster.sh down            stop every daemon this script started, by its pid,
#                                            and every process left in a node's namespace
#
# It touches nothing outside its own directory ($BOATLOAD_SLURM_DIR, default
# /tmp/boatload-slurm), /etc/slurm (slurm.conf, which the job steps read at
# that compiled-in path) and /run/munge (munged's socket); it listens on
# loopback only (ports 16817-1682x). See docs/slurm.md.
set -eu

DIR=${BOATLOAD_SLURM_DIR:-/tmp/boatload-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# boatload test cluster ($DIR)"
CTLD_PORT=${BOATLOAD_SLURM_PORT:-16817}
PARTITION=boatload
PACKAGES="slurmctld slurmd slurm-client munge"

say() { echo "slurm-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { cat "$DIR/pids/$1" 2>/dev/null || true; }

install_packages() {
    missing=""
    for p in $PACKAGES; do
        dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    [ "$(id -u)" = 0 ] || die "needs root to install:$missing"
    say "installing with apt-get:$missing"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >"$DIR/apt.log" 2>&1 || {
        apt-get -o DPkg::Lock::Timeout=600 update -qq >>"$DIR/apt.log" 2>&1
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >>"$DIR/apt.log" 2>&1
    } || { cat "$DIR/apt.log" >&2; die "apt-get could not install:$missing"; }
}

nodes() { cat "$DIR/nodes" 2>/dev/null || true; }

write_conf() {  # write_conf N
    n=$1
    host=$(hostname -s)
    names=""
    mem=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
    cpus=$(nproc)
    if [ -e "$CONF" ] && ! head -1 "$CONF" | grep -qF "# boatload test cluster"; then
        die "$CONF exists and is not ours; not overwriting it"
    fi
    mkdir -p /etc/slurm
    {
        echo "$MARK"
        echo "ClusterName=boatload"
        echo "SlurmctldHost=$host(127.0.0.1)"
        echo "SlurmctldPort=$CTLD_PORT"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "StateSaveLocation=$DIR/state"
        echo "SlurmdSpoolDir=$DIR/spool/%n"
        echo "SlurmctldPidFile=$DIR/run/slurmctld.pid"
        echo "SlurmdPidFile=$DIR/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
        echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core_Memory"
        echo "MpiDefault=none"
        echo "SwitchType=switch/none"
        echo "ReturnToService=2"
        # squeue keeps finished jobs this long: the executor's squeue status needs
        # MinJobAge >= 3 x its first status wait (docs/slurm.md)
        echo "MinJobAge=300"
        # a node whose slurmd stops answering is down (and its jobs NODE_FAIL) after 10 s
        echo "SlurmdTimeout=10"
        echo "SlurmctldTimeout=30"
        # scancel: SIGTERM to every process of the job, SIGKILL 30 s later
        echo "KillWait=30"
        echo "JobRequeue=0"
        echo "SchedulerParameters=sched_interval=2"
        i=1
        while [ "$i" -le "$n" ]; do
            echo "NodeName=node$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((CTLD_PORT + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"
            names="$names${names:+,}node$i"
            i=$((i + 1))
        done
        echo "PartitionName=$PARTITION Nodes=$names Default=YES MaxTime=INFINITE State=UP"
    } >"$CONF"
    echo "$names" | tr ',' '\n' >"$DIR/nodes"
}

start_slurmd() {  # start_slurmd NAME
    name=$1
    mkdir -p "$DIR/spool/$name"
    # A UTS namespace of its own: the node's processes see hostname = its name.
    setsid unshare --uts sh -c "hostname $name && exec slurmd -D -N $name" \
        >>"$DIR/log/slurmd-$name.out" 2>&1 </dev/null &
    echo $! >"$DIR/pids/slurmd-$name"
}

wait_idle() {  # wait_idle SECONDS NODE...
    limit=$1; shift
    t=0
    while :; do
        ok=yes
        for name in "$@"; do
            state=$(sinfo -h -n "$name" -o %T 2>/dev/null | head -1)
            case "$state" in idle|mixed|allocated) ;; *) ok=no ;; esac
        done
        [ "$ok" = yes ] && return 0
        [ "$t" -ge $((limit * 10)) ] && { sinfo >&2 || true; return 1; }
        sleep 0.1
        t=$((t + 1))
    done
}

up() {
    n=${1:-2}
    [ "$(id -u)" = 0 ] || die "needs root (munged, slurmd as root, /etc/slurm)"
    if alive "$(pid_of slurmctld)"; then die "already up (slurmctld pid $(pid_of slurmctld)); '$0 down' first"; fi
    mkdir -p "$DIR/pids" "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log" "$DIR/munge"
    # a failed start stops what it started
    trap 'st=$?; [ "$st" = 0 ] || { say "up failed; stopping what it started"; down >&2 || true; }' EXIT
    install_packages
    write_conf "$n"
    # munge: its own key and seed here, its socket where slurm looks (/run/munge)
    mkdir -p /run/munge
    [ -s "$DIR/munge/munge.key" ] || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 700 "$DIR/munge"
    chmod 400 "$DIR/munge/munge.key"
    setsid munged -F --force --key-file="$DIR/munge/munge.key" --seed-file="$DIR/munge/munged.seed" \
        --log-file="$DIR/log/munged.log" --pid-file="$DIR/munge/munged.pid" \
        --socket=/run/munge/munge.socket.2 >>"$DIR/log/munged.out" 2>&1 </dev/null &
    echo $! >"$DIR/pids/munged"
    t=0
    until [ -S /run/munge/munge.socket.2 ] && munge -n </dev/null >/dev/null 2>&1; do
        alive "$(pid_of munged)" || { cat "$DIR/log/munged.out" "$DIR/log/munged.log" >&2 2>/dev/null; die "munged did not start"; }
        [ "$t" -ge 100 ] && die "munged not answering after 10 s"
        sleep 0.1; t=$((t + 1))
    done
    setsid slurmctld -D -i >>"$DIR/log/slurmctld.out" 2>&1 </dev/null &
    echo $! >"$DIR/pids/slurmctld"
    t=0
    until scontrol ping 2>/dev/null | grep -q UP; do
        alive "$(pid_of slurmctld)" || { tail -20 "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.out" >&2 2>/dev/null; die "slurmctld did not start"; }
        [ "$t" -ge 200 ] && die "slurmctld not answering after 20 s"
        sleep 0.1; t=$((t + 1))
    done
    for name in $(nodes); do start_slurmd "$name"; done
    # shellcheck disable=SC2046
    wait_idle 60 $(nodes) || { tail -20 "$DIR"/log/slurmd-*.log >&2 2>/dev/null; die "nodes not idle after 60 s"; }
    remember_namespaces
    trap - EXIT
    status
}

status() {
    for f in "$DIR"/pids/*; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        if alive "$pid"; then echo "$(basename "$f") $pid"; else echo "$(basename "$f") $pid dead"; fi
    done
    sinfo -N -o "%N %T" 2>/dev/null || true
}

ns_of() { readlink "/proc/$1/ns/uts" 2>/dev/null || true; }

kill_namespace() {  # kill_namespace NAME: SIGKILL to every process in the node's UTS namespace
    name=$1
    ns=$(cat "$DIR/run/ns-$name" 2>/dev/null || true)
    [ -n "$ns" ] || return 0
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$(ns_of "$pid")" = "$ns" ] && kill -KILL "$pid" 2>/dev/null || true
    done
}

remember_namespaces() {
    for name in $(nodes); do
        pid=$(pid_of "slurmd-$name")
        ns=$(ns_of "$pid")
        [ -n "$ns" ] && [ "$ns" != "$(ns_of $$)" ] && echo "$ns" >"$DIR/run/ns-$name"
    done
    return 0
}

kill_node() {
    name=${1:?kill-node NAME}
    remember_namespaces
    pid=$(pid_of "slurmd-$name")
    alive "$pid" || die "slurmd of $name is not running"
    kill_namespace "$name"
    t=0
    while alive "$pid" && [ "$t" -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
    say "$name killed (slurmd pid $pid and every process in its namespace)"
}

start_node() {
    name=${1:?start-node NAME}
    alive "$(pid_of "slurmd-$name")" && die "slurmd of $name is already running"
    start_slurmd "$name"
    wait_idle 60 "$name" || die "$name not idle after 60 s"
    remember_namespaces
    say "$name up (slurmd pid $(pid_of "slurmd-$name"))"
}

stop_pid() {  # stop_pid NAME: SIGTERM, then SIGKILL after 10 s; waits until it is gone
    pid=$(pid_of "$1")
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    t=0
    while alive "$pid" && [ "$t" -lt 100 ]; do sleep 0.1; t=$((t + 1)); done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    t=0
    while alive "$pid" && [ "$t" -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
    ! alive "$pid" || say "$1 (pid $pid) would not stop"
}

down() {
    [ -d "$DIR/pids" ] || { say "not up (no $DIR/pids)"; return 0; }
    remember_namespaces
    for name in $(nodes); do
        stop_pid "slurmd-$name"
        kill_namespace "$name"  # job processes a stopped slurmd leaves behind
    done
    stop_pid slurmctld
    stop_pid munged
    left=""
    for f in "$DIR"/pids/*; do
        [ -e "$f" ] || continue
        alive "$(cat "$f")" && left="$left $(basename "$f"):$(cat "$f")"
    done
    [ -z "$left" ] || die "still alive:$left"
    rm -f "$DIR"/pids/* "$DIR"/run/ns-*
    if [ -e "$CONF" ] && head -1 "$CONF" | grep -qF "$MARK"; then rm -f "$CONF"; fi
    rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
    say "down"
}

cmd=${1:-status}
[ "$#" -gt 0 ] && shift
case "$cmd" in
    up) up "$@" ;;
    down) down ;;
    status) status ;;
    kill-node) kill_node "$@" ;;
    start-node) start_node "$@" ;;
    *) die "usage: $0 up [N] | down | status | kill-node NAME | start-node NAME" ;;
esac
