#!/usr/bin/env bash
# quick sweep used while tuning width
for h in 128 256 512; do
  python train.py --hidden $h --epochs 5 "$@"
done
