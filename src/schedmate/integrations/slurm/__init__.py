"""Slurm over its own CLI: squeue/sinfo with `--json`, sacct, scontrol (no pyslurm)."""

from schedmate.integrations.slurm.backend import SlurmBackend
from schedmate.integrations.slurm.parse import (
    expand_output_path,
    format_limit,
    job_from_squeue,
    jobs_from_squeue_json,
    node_from_sinfo,
    nodes_from_sinfo_json,
    parse_duration,
    parse_sacct,
    parse_scontrol_record,
)

__all__ = [
    "SlurmBackend",
    "expand_output_path",
    "format_limit",
    "job_from_squeue",
    "jobs_from_squeue_json",
    "node_from_sinfo",
    "nodes_from_sinfo_json",
    "parse_duration",
    "parse_sacct",
    "parse_scontrol_record",
]
