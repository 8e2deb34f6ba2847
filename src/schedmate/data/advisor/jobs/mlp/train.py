"""A two-layer MLP trained with plain numpy SGD on synthetic data (the demo's example job)."""

import argparse
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description="numpy MLP on synthetic regression data")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--num-samples", type=int, default=20000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden-dim", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()

    rng = np.random.default_rng(0)
    x = rng.normal(size=(args.num_samples, 512)).astype(np.float32)
    y = np.sin(x[:, :1]) + 0.1 * rng.normal(size=(args.num_samples, 1)).astype(np.float32)
    w1 = rng.normal(scale=0.1, size=(512, args.hidden_dim)).astype(np.float32)
    w2 = rng.normal(scale=0.1, size=(args.hidden_dim, 1)).astype(np.float32)
    t0 = time.time()
    for epoch in range(args.epochs):
        for step, i in enumerate(range(0, args.num_samples, args.batch_size)):
            xb, yb = x[i:i + args.batch_size], y[i:i + args.batch_size]
            h = np.maximum(xb @ w1, 0)
            err = h @ w2 - yb
            g2 = h.T @ err / len(xb)
            g1 = xb.T @ ((err @ w2.T) * (h > 0)) / len(xb)
            w1 -= args.lr * g1
            w2 -= args.lr * g2
        loss = float(np.mean(err**2))
        print(f"epoch {epoch + 1}/{args.epochs} step {step + 1} loss {loss:.4f} elapsed {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
