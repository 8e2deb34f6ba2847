#!/bin/bash
#SBATCH --job-name=softmax
#SBATCH --gres=gpu:1
CONFIG=${1:-configs/base.yaml}
python fit.py "$CONFIG"
