#!/usr/bin/env bash
# A real single-node Slurm for the integration tests: Debian slurm-wlm (22.05) + munge,
# slurmctld and slurmd on 127.0.0.1, four fake GPUs (device files + gres.conf), completed
# jobs in a jobcomp/filetxt file for `sacct -c`. Idempotent: ~0.2 s when all is running.
# Prints the SLURM_CONF to use on its last line (`SLURM_CONF=/path`).
# Needs root (apt, munge, slurmd). State: $SCHEDMATE_SLURM_DIR (default /var/lib/schedmate-ci/slurm).
set -euo pipefail

STATE="${SCHEDMATE_SLURM_DIR:-/var/lib/schedmate-ci/slurm}"
CONF="$STATE/slurm.conf"
HOST="$(hostname -s)"
export SLURM_CONF="$CONF"

log() { echo "provision_slurm: $*" >&2; }

node_idle() {
    local st
    st="$(timeout 5 sinfo -h -N -n "$HOST" -o '%T' 2>/dev/null | head -n1)" || return 1
    [[ "$st" == idle* || "$st" == mixed* || "$st" == allocated* ]]
}

if [[ -f "$CONF" ]] && command -v sinfo >/dev/null && node_idle; then
    echo "SLURM_CONF=$CONF"
    exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
    log "needs root (installs packages, starts munged/slurmctld/slurmd)"
    exit 2
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    log "installing slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || true
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/dev" "$STATE/log"
for i in 0 1 2 3; do
    [[ -e "$STATE/dev/gpu$i" ]] || mknod "$STATE/dev/gpu$i" c 1 3
done

cat >"$CONF.new" <<CONF
# Written by .ci/provision_slurm.sh: a single-node test cluster, not for production.
ClusterName=schedmate-ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
JobRequeue=1
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=2
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=60
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=16 RealMemory=8000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
cat >"$STATE/gres.conf.new" <<CONF
AutoDetect=off
NodeName=$HOST Name=gpu File=$STATE/dev/gpu[0-3]
CONF
mv "$CONF.new" "$CONF"
mv "$STATE/gres.conf.new" "$STATE/gres.conf"

# munge: a key (Debian's package creates one; make sure), then the daemon
if [[ ! -s /etc/munge/munge.key ]]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    chown munge: /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
fi
mkdir -p /run/munge && chown munge: /run/munge
if ! munge -n </dev/null >/dev/null 2>&1; then
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
fi

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

if ! pid_alive "$STATE/slurmctld.pid"; then
    log "starting slurmctld"
    slurmctld -f "$CONF"
fi
for _ in $(seq 100); do timeout 5 scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
if ! pid_alive "$STATE/slurmd.pid"; then
    log "starting slurmd"
    slurmd -f "$CONF"
fi

for i in $(seq 150); do
    if node_idle; then
        echo "SLURM_CONF=$CONF"
        exit 0
    fi
    st="$(timeout 5 sinfo -h -N -n "$HOST" -o '%T' 2>/dev/null | head -n1 || true)"
    if [[ "$st" == drain* || "$st" == down* ]] && (( i % 10 == 1 )); then
        timeout 5 scontrol update NodeName="$HOST" State=RESUME 2>/dev/null || true
    fi
    sleep 0.2
done
log "node $HOST did not become idle (state: ${st:-none}); see $STATE/log/"
exit 1
