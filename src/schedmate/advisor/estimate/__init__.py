"""Duration prediction: the k-NN estimator and its fallbacks (`estimator`), what it learns from
the whole history (`calibration`), and the baselines it is compared with (`baselines`)."""

from schedmate.advisor.estimate.calibration import calibrate, startup_costs
from schedmate.advisor.estimate.estimator import Z90, DurationEstimator, Prediction, similar_names, work_units

__all__ = [
    "DurationEstimator",
    "Prediction",
    "Z90",
    "calibrate",
    "similar_names",
    "startup_costs",
    "work_units",
]
