"""Checks of values every layer takes (library, control protocol, workspace files)."""

from __future__ import annotations

import math

__all__ = ["MAX_GRACEFUL_TIMEOUT", "check_graceful_timeout"]

#: The longest grace between SIGTERM and SIGKILL a proc may be given (seconds).
#: Bounded, so that shutting a supervisor down is bounded too.
MAX_GRACEFUL_TIMEOUT = 60.0


def check_graceful_timeout(value: object, what: str = "graceful_timeout") -> float:
    """``value`` as seconds of grace: a finite number in [0, MAX_GRACEFUL_TIMEOUT].

    Raises ValueError with a one-line reason otherwise (``inf``, ``nan``, a
    negative number, a bool or a string).

    >>> check_graceful_timeout(2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number of seconds, got {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_GRACEFUL_TIMEOUT:
        raise ValueError(
            f"{what} must be between 0 and {MAX_GRACEFUL_TIMEOUT:g} seconds, got {value!r}"
        )
    return seconds
