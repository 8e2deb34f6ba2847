"""Prometheus metrics of `watch` (optional: prometheus_client, the `watch` extra).

Per-job series carry job_id/user/partition labels and are removed when the job stops
running, so the number of series is bounded by the running jobs.
"""

from __future__ import annotations

import contextlib
from typing import Any

from schedmate.core.cluster import JobView
from schedmate.core.errors import ConfigError

__all__ = ["WatchMetrics"]

_JOB_LABELS = ("job_id", "user", "partition")


class WatchMetrics:
    def __init__(self) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise ConfigError(
                "watch.metrics_port: needs prometheus_client (pip install 'schedmate[watch]')"
            ) from None
        self._prom = prom
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.progress = prom.Gauge(
            "schedmate_job_progress", "Fraction of the job done", _JOB_LABELS, registry=r
        )
        self.eta = prom.Gauge(
            "schedmate_job_eta_seconds", "Estimated seconds to finish", _JOB_LABELS, registry=r
        )
        self.step = prom.Gauge(
            "schedmate_job_step_seconds", "Recent seconds per step", _JOB_LABELS, registry=r
        )
        self.slowdown = prom.Gauge(
            "schedmate_job_slowdown", "1 while the job runs slower", _JOB_LABELS, registry=r
        )
        self.stalled = prom.Gauge(
            "schedmate_job_stalled", "1 while the job's log is stalled", _JOB_LABELS, registry=r
        )
        self.actions = prom.Counter(
            "schedmate_actions", "Actions by kind and mode", ("kind", "mode"), registry=r
        )
        self.failures = prom.Counter(
            "schedmate_failures", "Diagnosed failures by category and kind", ("category", "kind"), registry=r
        )
        self.cycle = prom.Gauge("schedmate_cycle_seconds", "Duration of the last cycle", registry=r)
        self.cycle_errors = prom.Counter("schedmate_cycle_errors", "Cycles that failed", registry=r)
        self.jobs = prom.Gauge("schedmate_jobs", "Jobs seen in the last snapshot", ("state",), registry=r)
        self._live: dict[str, tuple[str, str, str]] = {}
        self._server: Any = None

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        """Start the /metrics HTTP server in a thread; returns the port bound."""
        server, _thread = self._prom.start_http_server(port, addr=host, registry=self.registry)
        self._server = server
        return int(server.server_port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    def job(
        self,
        job: JobView,
        *,
        progress: float | None,
        eta_s: float | None,
        step_s: float | None,
        slowdown: bool,
        stalled: bool,
    ) -> None:
        labels = (job.job_id, job.user or "", job.partition or "")
        self._live[job.job_id] = labels
        for gauge, value in (
            (self.progress, progress),
            (self.eta, eta_s),
            (self.step, step_s),
            (self.slowdown, float(slowdown)),
            (self.stalled, float(stalled)),
        ):
            if value is not None:
                gauge.labels(*labels).set(value)

    def keep_only(self, running: set[str]) -> None:
        """Drop the series of jobs that are no longer running."""
        for job_id in [j for j in self._live if j not in running]:
            labels = self._live.pop(job_id)
            for gauge in (self.progress, self.eta, self.step, self.slowdown, self.stalled):
                with contextlib.suppress(KeyError):
                    gauge.remove(*labels)

    def render(self) -> str:
        return self._prom.generate_latest(self.registry).decode()
