#!/usr/bin/env bash
# usage: bash scripts/run.sh [ENV_FILE]   (default: .env)
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_FILE=${1:-.env}
set -a
# shellcheck disable=SC1090
source "$ENV_FILE"
set +a
echo "running ${RUN_NAME} with ${ENV_FILE}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
python ppo.py
