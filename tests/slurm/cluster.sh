#!/bin/sh
# A Slurm cluster on this host for the cluster tests (Debian's slurm-wlm + munge), run as root.
#
# Three nodes: this host itself (partition `debug`, the default) and two simulated nodes `node1`,
# `node2` (partition `pair`): each a `slurmd -N nodeX` on loopback with its own port, in its own UTS
# namespace (hostname nodeX) and mount namespace (a private /run/lock, where the measuring lock
# lives, and a private slurmd spool); the project, venv and cache are shared, as on a shared
# filesystem.
#
#   tests/slurm/cluster.sh up              install (apt-get, first time only), configure, start; waits until idle
#   tests/slurm/cluster.sh down            stop the daemons this script started (and jobs left on a killed node)
#   tests/slurm/cluster.sh status          exit 0 when the controller answers and every node is usable
#   tests/slurm/cluster.sh kill-node NODE  a node failure: NODE's slurmd is killed (its jobs' processes go on)
#   tests/slurm/cluster.sh start-node NODE start NODE's slurmd again and return it to service
#
# slurm.conf must sit at /etc/slurm/slurm.conf: with only SLURM_CONF set, srun inside a job looks
# the controller up by DNS SRV and fails. There is no slurmdbd, so Snakemake's Slurm executor must
# use `--slurm-status-command squeue` (profiles/slurm does).
set -eu

STATE=/run/specsweep-slurm          # pid files of the daemons started here
CONF=/etc/slurm/slurm.conf
HOST=$(hostname -s)
PAIR="node1 node2"                  # the simulated nodes
CLUSTER_NAME=specsweep-test         # slurm.conf ClusterName: a job's processes carry it (SLURM_CLUSTER_NAME)

die() { echo "tests/slurm/cluster.sh: $*" >&2; exit 1; }

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null && return 0
    [ "$(id -u)" = 0 ] || die "Slurm is not installed and installing it needs root (apt-get install slurm-wlm munge)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
        || die "apt-get install slurm-wlm munge failed"
}

configure() {
    mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm "$STATE" /run/munge /var/log/munge \
        /etc/munge /var/lib/munge
    cpus=$(nproc)
    # Leave the host some memory; jobs ask for theirs with --mem.
    memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
    cat > "$CONF" <<CONFEOF
# Written by specsweep tests/slurm/cluster.sh: a one-node cluster for the tests.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$HOST
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmUser=root
SlurmdUser=root
MinJobAge=300
ReturnToService=2
KillWait=10
OverTimeLimit=0
MpiDefault=none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$HOST CPUs=$cpus RealMemory=$memory State=UNKNOWN
NodeName=node1 NodeHostname=node1 NodeAddr=127.0.0.1 Port=6821 CPUs=$cpus RealMemory=2000 State=UNKNOWN
NodeName=node2 NodeHostname=node2 NodeAddr=127.0.0.1 Port=6822 CPUs=$cpus RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=pair Nodes=node1,node2 Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO
CONFEOF
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
    fi
    chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
    chmod 400 /etc/munge/munge.key
    chmod 700 /etc/munge
}

running() { [ -s "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

# A simulated node's slurmd, in new UTS and mount namespaces (unshare stays its parent: its pid is
# the node's pid file; --kill-child: killing it kills that slurmd at once, as a crashed node would).
# The namespace's own /run/lock, spool and pid directory are private tmpfs mounts.
NODE_SH='hostname "$1" && for d in /run/lock /var/spool/slurmd '"$STATE"'; do mount -t tmpfs "$1" "$d"; done && exec slurmd -D -N "$1" -L /var/log/slurm/slurmd-"$1".log'

start_node() {
    running "slurmd-$1" && return 0
    setsid unshare --uts --mount --propagation private --fork --kill-child=SIGKILL sh -c "$NODE_SH" node "$1" \
        >/dev/null 2>&1 < /dev/null &
    echo $! > "$STATE/slurmd-$1.pid"
    i=0
    until [ -e "/proc/$(cat "$STATE/slurmd-$1.pid")/ns/uts" ] && ns_of "$1" >/dev/null; do
        i=$((i + 1)); [ $i -le 20 ] || die "slurmd of $1 did not start; see /var/log/slurm/slurmd-$1.log"; sleep 0.25
    done
    ns_of "$1" > "$STATE/$1.uts"
}

# The UTS namespace of a node's slurmd (unshare's child), once it runs.
ns_of() {
    child=$(cat "/proc/$(cat "$STATE/slurmd-$1.pid")/task/"*/children 2>/dev/null | tr -s ' ' '\n' | head -1)
    [ -n "$child" ] && readlink "/proc/$child/ns/uts"
}

kill_node() {
    if running "slurmd-$1"; then
        kill -KILL "$(cat "$STATE/slurmd-$1.pid")"
    fi
    rm -f "$STATE/slurmd-$1.pid"
}

# Every process left in a killed node's namespace (slurmstepd and the jobs it ran).
kill_node_processes() {
    [ -s "$STATE/$1.uts" ] || return 0
    ns=$(cat "$STATE/$1.uts")
    for proc in /proc/[0-9]*; do
        [ "$(readlink "$proc/ns/uts" 2>/dev/null)" = "$ns" ] && kill -KILL "${proc#/proc/}" 2>/dev/null
    done
    rm -f "$STATE/$1.uts"
}

start() {
    if ! munge -n >/dev/null 2>&1; then
        su -s /bin/sh munge -c "munged --pid-file=/run/munge/munged.pid" || die "munged did not start"
    fi
    # Each daemon in its own session, detached; the pid files are what `down` stops.
    running slurmctld || setsid slurmctld -i >/dev/null 2>&1 < /dev/null
    running slurmd || setsid slurmd >/dev/null 2>&1 < /dev/null
    for node in $PAIR; do start_node "$node"; done
    i=0
    until usable; do
        i=$((i + 1))
        [ $i -le 60 ] || die "the nodes did not become idle in 60 s: $(sinfo -N 2>&1); see /var/log/slurm/"
        [ $((i % 10)) -ne 5 ] || scontrol update nodename="$HOST,node1,node2" state=resume >/dev/null 2>&1 || true
        sleep 1
    done
}

# A job's processes that outlived their step (seen: a job step's snakemake left hanging after a Ctrl-C test,
# reparented to init once its slurmstepd ended, which proctrack/linuxproc then no longer follows): every process
# whose environment names this cluster, which no process outside its jobs has.
kill_job_leftovers() {
    for proc in /proc/[0-9]*; do
        cat "$proc/environ" 2>/dev/null | tr '\0' '\n' | grep -qx "SLURM_CLUSTER_NAME=$CLUSTER_NAME" &&
            kill -KILL "${proc#/proc/}" 2>/dev/null
    done
    return 0
}

stop() {
    for node in $PAIR; do kill_node "$node"; kill_node_processes "$node"; done
    for daemon in slurmd slurmctld; do
        if running "$daemon"; then
            pid=$(cat "$STATE/$daemon.pid")
            kill "$pid"
            i=0
            while kill -0 "$pid" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.5; i=$((i + 1)); done
        fi
        rm -f "$STATE/$daemon.pid"
    done
    if [ -s /run/munge/munged.pid ]; then
        kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    fi
    kill_job_leftovers
}

# Every node answers (idle, mixed or allocated), none is down or drained.
usable() {
    states=$(sinfo -h -N -o %t 2>/dev/null) && [ -n "$states" ] && ! echo "$states" | grep -Evq '^(idle|mix|alloc)$'
}

case "${1:-}" in
    status) usable ;;
    up) install; configure; start; echo "slurm up: $(sinfo -h -N -o '%N %t %c CPUs %m MB')" ;;
    down) stop; echo "slurm down" ;;
    kill-node) kill_node "${2:?node}" ;;
    start-node)
        kill_node_processes "${2:?node}"
        start_node "$2"
        i=0
        until sinfo -h -n "$2" -o %t | grep -Eq '^(idle|mix|alloc)$'; do
            i=$((i + 1)); [ $i -le 60 ] || die "$2 did not return to service: $(sinfo -h -n "$2")"
            [ $((i % 5)) -ne 2 ] || scontrol update nodename="$2" state=resume >/dev/null 2>&1 || true
            sleep 1
        done ;;
    *) die "usage: $0 up|down|status|kill-node NODE|start-node NODE" ;;
esac
