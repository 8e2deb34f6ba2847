"""Adapters to the outside world (Slurm today; Ray and Prometheus later).

Nothing here is imported by `schedmate` or the CLI at start-up: the SDK imports an adapter
inside the operation that needs it, so `schedmate --help` stays fast and optional
dependencies stay optional.
"""
