"""Softmax regression on synthetic classes, configured by a YAML file (numpy only)."""

import sys
import time

import numpy as np
import yaml


def main() -> None:
    cfg = yaml.safe_load(open(sys.argv[1] if len(sys.argv) > 1 else "configs/base.yaml"))
    train = cfg["train"]
    rng = np.random.default_rng(1)
    n, d, k = cfg["data"]["num_samples"], cfg["data"]["features"], cfg["data"]["classes"]
    x = rng.normal(size=(n, d)).astype(np.float32)
    labels = (x[:, :k] ** 2).argmax(axis=1)
    w = np.zeros((d, k), dtype=np.float32)
    t0 = time.time()
    for step in range(train["max_steps"]):
        idx = rng.integers(0, n, size=train["batch_size"])
        logits = x[idx] @ w
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(idx)), labels[idx]] -= 1
        w -= train["lr"] * x[idx].T @ p / len(idx)
        if step % 500 == 0:
            print(f"step {step}/{train['max_steps']} time {time.time() - t0:.2f}s", flush=True)


if __name__ == "__main__":
    main()
