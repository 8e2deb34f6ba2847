"""Line and record shapes met on unseen logs (issue 10, seventh pass). Every case is a variant
written here (keys, separators, orders, languages and values of our own), none is a line of a
data set."""

from __future__ import annotations

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_python_loggings_default_prefix_is_not_part_of_the_line() -> None:
    # `LEVEL:logger:message`, logging's default format, before a bare [epoch, batch] pair
    lines = [f"INFO:trainer:[3, {i:4d}] loss: -{i}1.5" for i in range(10, 13)]
    r = run(["WARNING:py.warnings:a deprecation notice", *lines])
    assert (r.step, r.loss) == (12, -121.5)
