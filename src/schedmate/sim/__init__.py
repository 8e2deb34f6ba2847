"""Trace-driven cluster simulator with classic and semantic scheduling policies."""

from schedmate.sim.cluster import default_cluster, default_nodes, parse_cluster
from schedmate.sim.engine import JobState, SimResult, Simulator
from schedmate.sim.estimators import make_estimator
from schedmate.sim.failures import FailureModel
from schedmate.sim.interference import InterferenceModel
from schedmate.sim.metrics import Metrics, summarize_sim
from schedmate.sim.placement import PLACEMENTS
from schedmate.sim.policies import POLICIES, make_policy
from schedmate.sim.semantics import SEMANTICS, Semantics, parse_semantics
from schedmate.sim.trace import DEFAULT_CLUSTERS, TRACE_FORMATS, TraceJob, load_trace, synthetic_trace

__all__ = [
    "DEFAULT_CLUSTERS",
    "FailureModel",
    "InterferenceModel",
    "JobState",
    "Metrics",
    "PLACEMENTS",
    "POLICIES",
    "SEMANTICS",
    "Semantics",
    "SimResult",
    "Simulator",
    "TRACE_FORMATS",
    "TraceJob",
    "default_cluster",
    "default_nodes",
    "load_trace",
    "make_estimator",
    "make_policy",
    "parse_cluster",
    "parse_semantics",
    "summarize_sim",
    "synthetic_trace",
]
