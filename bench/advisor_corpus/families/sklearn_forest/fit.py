"""Fit a scikit-learn model described by a YAML experiment file, with k-fold CV.

    python fit.py conf/rf_small.yaml
    python fit.py conf/hgb.yaml --n-jobs 2
"""
import sys
import time

import numpy as np
import yaml
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.model_selection import KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

ESTIMATORS = {
    "random_forest": RandomForestClassifier,
    "extra_trees": ExtraTreesClassifier,
    "hist_gradient_boosting": HistGradientBoostingClassifier,
    "random_forest_regressor": RandomForestRegressor,
}


def load(path, argv):
    with open(path) as f:
        exp = yaml.safe_load(f)
    if "--n-jobs" in argv:
        exp["cv"]["n_jobs"] = int(argv[argv.index("--n-jobs") + 1])
    return exp


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: python fit.py EXPERIMENT.yaml [--n-jobs N]")
    exp = load(sys.argv[1], sys.argv)
    d = exp["dataset"]
    task = exp.get("task", "classification")
    t0 = time.time()
    if task == "regression":
        X, y = make_regression(n_samples=d["n_samples"], n_features=d["n_features"], n_informative=d["n_informative"], noise=10.0, random_state=d["seed"])
    else:
        X, y = make_classification(n_samples=d["n_samples"], n_features=d["n_features"], n_informative=d["n_informative"],
                                   n_classes=d.get("n_classes", 2), random_state=d["seed"])
    print(f"[{exp['name']}] dataset {X.shape} generated in {time.time() - t0:.2f}s")

    est = ESTIMATORS[exp["model"]["estimator"]](**exp["model"].get("params", {}))
    pipe = make_pipeline(StandardScaler(), est)
    cv = KFold(n_splits=exp["cv"]["folds"], shuffle=True, random_state=0)
    res = cross_validate(pipe, X, y, cv=cv, n_jobs=exp["cv"].get("n_jobs", 1), verbose=2,
                         scoring=exp["cv"].get("scoring"), return_train_score=False)
    for i, (s, ft) in enumerate(zip(res["test_score"], res["fit_time"])):
        print(f"fold {i}: score={s:.4f} fit_time={ft:.2f}s")
    print(f"[{exp['name']}] mean score {np.mean(res['test_score']):.4f} +- {np.std(res['test_score']):.4f}; total {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
