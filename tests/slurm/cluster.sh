#!/bin/sh
# A single-host Slurm cluster for the cluster tests (Debian's slurm-wlm + munge), run as root.
#
#   tests/slurm/cluster.sh up     install (apt-get, first time only), configure, start; waits until idle
#   tests/slurm/cluster.sh down   stop the daemons this script started
#   tests/slurm/cluster.sh status exit 0 when the controller answers and the node is usable
#
# slurm.conf must sit at /etc/slurm/slurm.conf: with only SLURM_CONF set, srun inside a job looks
# the controller up by DNS SRV and fails. There is no slurmdbd, so Snakemake's Slurm executor must
# use `--slurm-status-command squeue` (profiles/slurm does).
set -eu

STATE=/run/specsweep-slurm          # pid files of the daemons started here
CONF=/etc/slurm/slurm.conf
HOST=$(hostname -s)

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
ClusterName=specsweep-test
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
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONFEOF
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
    fi
    chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
    chmod 400 /etc/munge/munge.key
    chmod 700 /etc/munge
}

running() { [ -s "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

start() {
    if ! munge -n >/dev/null 2>&1; then
        su -s /bin/sh munge -c "munged --pid-file=/run/munge/munged.pid" || die "munged did not start"
    fi
    # Each daemon in its own session, detached; the pid files are what `down` stops.
    running slurmctld || setsid slurmctld -i >/dev/null 2>&1 < /dev/null
    running slurmd || setsid slurmd >/dev/null 2>&1 < /dev/null
    i=0
    until usable; do
        i=$((i + 1))
        [ $i -le 60 ] || die "the node did not become idle in 60 s: $(sinfo -N 2>&1 | tail -1); see /var/log/slurm/"
        [ $((i % 10)) -ne 5 ] || scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
        sleep 1
    done
}

stop() {
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
}

usable() { sinfo -h -N -o %t 2>/dev/null | grep -Eq '^(idle|mix|alloc)'; }

case "${1:-}" in
    status) usable ;;
    up) install; configure; start; echo "slurm up: $(sinfo -h -N -o '%N %t %c CPUs %m MB')" ;;
    down) stop; echo "slurm down" ;;
    *) die "usage: $0 up|down|status" ;;
esac
