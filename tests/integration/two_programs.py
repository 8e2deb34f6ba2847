"""A history of two programs for Advisor tests with real parts: a small LM run at four amounts of
work (3 s + 1 s per 50 iterations) and an unrelated Keras CNN, plus an LM job to predict (15 s)."""

from __future__ import annotations

from pathlib import Path

from schedmate.advisor import JobRecord

LM = (
    "import argparse\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    "p = argparse.ArgumentParser()\np.add_argument('--max-iters', type=int, default=100)\n"
    "p.add_argument('--batch-size', type=int, default=32)\np.add_argument('--n-layer', type=int, default=4)\n"
    "p.add_argument('--n-embd', type=int, default=256)\np.add_argument('--block-size', type=int, default=128)\n"
    "p.add_argument('--dataset', default='shakespeare_char')\nopt = torch.optim.AdamW([], lr=3e-4)\n"
)
CNN = (
    "import keras\nmodel = keras.Sequential([keras.layers.Conv2D(32, 3), keras.layers.Dense(10)])\n"
    "model.compile(optimizer='sgd')\n(x, y), _ = keras.datasets.cifar10.load_data()\n"
    "model.fit(x, y, epochs=5, batch_size=128)\n"
)


def two_programs(tmp_path: Path) -> tuple[list[JobRecord], JobRecord]:
    """(history of 7 jobs: lm0-lm3 then cnn0-cnn2, the LM query)."""
    lm, cnn = tmp_path / "lm", tmp_path / "cnn"
    for d, text in ((lm, LM), (cnn, CNN)):
        d.mkdir()
        (d / "train.py").write_text(text)
    hist = [
        JobRecord(
            job_id=f"lm{i}",
            duration_s=3.0 + it / 50,
            user="ann",
            code_dir=str(lm),
            command=f"python train.py --max-iters {it}",
        )
        for i, it in enumerate((100, 200, 400, 800))
    ]
    hist += [
        JobRecord(
            job_id=f"cnn{i}", duration_s=500.0 + i, user="bob", code_dir=str(cnn), command="python train.py"
        )
        for i in range(3)
    ]
    return hist, JobRecord(
        job_id="q", user="ann", code_dir=str(lm), command="python train.py --max-iters 600"
    )
