#!/usr/bin/env bash
# run every experiment in conf/
set -e
for f in conf/*.yaml; do
  python fit.py "$f"
done
