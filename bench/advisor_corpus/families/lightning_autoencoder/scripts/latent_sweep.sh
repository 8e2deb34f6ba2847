#!/usr/bin/env bash
# Train autoencoders with different bottleneck sizes.
for LATENT in 64 128 256 384; do
  python train.py --latent_dim "$LATENT" --max_epochs 10
done
