"""Fixtures of the fault suites: the ``server`` fixture (a real ``procwindow serve``)
is the control tests' own, shared here rather than copied."""

from __future__ import annotations

from ..control.conftest import server

__all__ = ["server"]
