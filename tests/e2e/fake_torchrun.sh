#!/bin/sh
# A stand-in for torchrun (tests/e2e/t_ranks.sh): start NPROC copies of a
# program at once on this node, each with the environment torchrun gives its
# workers, wait for all of them, fail when one fails.
#   fake_torchrun.sh [--nproc_per_node N] [--nnodes N --node_rank K] PROGRAM [ARG]...
set -u
nproc=1 nnodes=1 node_rank=0
while [ $# -gt 0 ]; do
	case $1 in
	--nproc_per_node=*) nproc=${1#*=} ;;
	--nproc_per_node) nproc=$2; shift ;;
	--nnodes=*) nnodes=${1#*=} ;;
	--nnodes) nnodes=$2; shift ;;
	--node_rank=*) node_rank=${1#*=} ;;
	--node_rank) node_rank=$2; shift ;;
	--) shift; break ;;
	-*) echo "fake_torchrun: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || { echo "usage: fake_torchrun.sh [--nproc_per_node N] PROGRAM [ARG]..." >&2; exit 2; }
world=$((nproc * nnodes))
run_id=fake-$$
pids=
local_rank=0
while [ "$local_rank" -lt "$nproc" ]; do
	RANK=$((node_rank * nproc + local_rank)) LOCAL_RANK=$local_rank WORLD_SIZE=$world \
		LOCAL_WORLD_SIZE=$nproc GROUP_RANK=$node_rank ROLE_RANK=$((node_rank * nproc + local_rank)) \
		MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 TORCHELASTIC_RUN_ID=$run_id \
		TORCHELASTIC_RESTART_COUNT=0 "$@" &
	pids="$pids $!"
	local_rank=$((local_rank + 1))
done
rc=0
for p in $pids; do
	wait "$p" || rc=1
done
exit $rc
