#!/usr/bin/env bash
# Launch data-parallel training on one node.
# usage: NPROC=2 bash scripts/launch.sh --epochs 4 --batch-size 32
set -euo pipefail
NPROC=${NPROC:-2}
exec torchrun --standalone --nnodes=1 --nproc_per_node="${NPROC}" train.py "$@"
