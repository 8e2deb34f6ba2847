"""Gradient-boosted trees on a synthetic credit-risk style table.

    python train_xgb.py --config configs/baseline.json
    python train_xgb.py --config configs/deep_trees.json --n-jobs 2
"""
import argparse
import json
import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="JSON file with data/model/training sections")
    ap.add_argument("--n-jobs", type=int, default=None, help="threads for xgboost (overrides config)")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    data_cfg, params, train_cfg = cfg["data"], cfg["params"], cfg["training"]
    if args.n_jobs is not None:
        params["nthread"] = args.n_jobs

    t0 = time.time()
    X, y = make_classification(n_samples=data_cfg["n_samples"], n_features=data_cfg["n_features"],
                               n_informative=data_cfg["n_informative"], weights=[0.8, 0.2],
                               flip_y=0.02, random_state=data_cfg.get("seed", 0))
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=data_cfg["valid_fraction"], random_state=0)
    print(f"data: train {X_tr.shape}, valid {X_va.shape} ({time.time() - t0:.1f}s)")

    dtrain = xgb.DMatrix(X_tr, label=y_tr)
    dvalid = xgb.DMatrix(X_va, label=y_va)
    booster = xgb.train(params, dtrain, num_boost_round=train_cfg["num_boost_round"],
                        evals=[(dtrain, "train"), (dvalid, "valid")],
                        early_stopping_rounds=train_cfg.get("early_stopping_rounds"),
                        verbose_eval=train_cfg.get("verbose_eval", 25))
    auc = roc_auc_score(y_va, booster.predict(dvalid))
    print(f"rounds={booster.num_boosted_rounds()} valid_auc={auc:.4f} total {time.time() - t0:.1f}s")
    if train_cfg.get("save_model"):
        booster.save_model(train_cfg["save_model"])


if __name__ == "__main__":
    main()
