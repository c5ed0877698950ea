"""The two test tiers: a pytest plugin (loaded by tests/conftest.py) and its helpers.

``./scripts/test`` runs the fast tier; ``./scripts/test --full`` runs everything;
``--rest`` runs what the fast tier leaves out, so CI runs the fast tier first and
then the rest, and loses nothing. A test is left to the full tier only when

- it is marked ``slow`` (stress, floods, the larger sizes of a screenshot, …), or
- it is the ``qasync`` variant of a test that runs on both event loops (the ``run``
  fixture) and is not marked ``both_loops``: lifecycle, events and capture keep both
  loops in the fast tier, every other test runs on asyncio there.

Hypothesis tests ask :func:`examples` for their count: a tenth in the fast tier, the
full count in the full tier (``--rest`` runs them again at that count).

A test named on the command line (``FILE::TEST``) always runs. Nothing is left out
silently: the run ends with a line that says what it left out, and why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

#: True when this run's Hypothesis tests run at their full counts (``--full``, ``--rest``).
FULL = False

#: The fast tier runs this share of a Hypothesis test's examples (at least ``_MIN_EXAMPLES``).
_FAST_SHARE = 10
_MIN_EXAMPLES = 15

#: Wall-clock bounds that depend on the machine's load are multiplied by this
#: (``PROCWINDOW_TEST_TIME_SCALE``, default 1).
TIME_SCALE = float(os.environ.get("PROCWINDOW_TEST_TIME_SCALE") or 1)

SLOW = "marked slow"
OTHER_LOOP = "the qasync variant of a test not marked both_loops"
FAST_TIER = "in the fast tier"

_LEFT_OUT = pytest.StashKey[dict[str, int]]()
_WORKER_KEY = "procwindow_left_out"


def examples(full: int) -> int:
    """How many examples a Hypothesis test runs: ``full`` in the full tier."""
    return full if FULL else max(_MIN_EXAMPLES, full // _FAST_SHARE)


def scaled(seconds: float) -> float:
    """A wall-clock bound, stretched for a loaded machine (see ``TIME_SCALE``)."""
    return seconds * TIME_SCALE


def first_fast(values: Iterable[T], ids: Sequence[str] | None = None) -> list[Any]:
    """Parameters of which the first runs in the fast tier, all in the full tier
    (the same screenshot at its smallest size, say, where clipping shows first)."""
    params = []
    for i, value in enumerate(values):
        marks = () if i == 0 else (pytest.mark.slow,)
        params.append(pytest.param(value, id=None if ids is None else ids[i], marks=marks))
    return params


def left_to_full_tier(item: pytest.Item) -> str | None:
    """Why the fast tier leaves ``item`` out, or None if it runs it."""
    if item.get_closest_marker("slow"):
        return SLOW
    callspec = getattr(item, "callspec", None)
    if (
        callspec is not None
        and callspec.params.get("run") == "qasync"
        and not item.get_closest_marker("both_loops")
    ):
        return OTHER_LOOP
    return None


def _is_hypothesis(item: pytest.Item) -> bool:
    return bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))


# -- the plugin ------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("procwindow tiers")
    group.addoption(
        "--full",
        action="store_true",
        help="run every test: the slow ones, both event loops everywhere, Hypothesis at "
        "its full counts (default: the fast tier; see tests/tiers.py)",
    )
    group.addoption(
        "--promises-to",
        metavar="PATH",
        help="write, as JSON, the README promise each test of this run is marked with "
        "(tests/test_tiers.py reads it)",
    )
    group.addoption(
        "--rest",
        action="store_true",
        help="run what the fast tier leaves out, and the Hypothesis tests at their full "
        "counts: the fast tier and then --rest run the full suite",
    )


def pytest_configure(config: pytest.Config) -> None:
    global FULL
    if config.getoption("full") and config.getoption("rest"):
        raise pytest.UsageError("--full and --rest: choose one")
    FULL = bool(config.getoption("full") or config.getoption("rest"))
    config.addinivalue_line(
        "markers",
        "slow: in the full tier only (./scripts/test --full): stress, floods, the larger "
        "sizes of a screenshot",
    )
    config.addinivalue_line(
        "markers",
        "promise(name): proves the README promise NAME (a section, or 'Section: lead' of "
        "a bold lead); tests/test_tiers.py checks that each has a test in the fast tier",
    )
    config.addinivalue_line(
        "markers",
        "both_loops: runs on asyncio and qasync in the fast tier too (lifecycle, events, capture)",
    )


def _named(config: pytest.Config) -> list[str]:
    """The node ids named on the command line (``FILE::TEST``): those always run."""
    named = []
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        if not sep:
            continue
        try:
            rel = Path(path).resolve().relative_to(config.rootpath)
        except ValueError:
            continue
        named.append(f"{rel.as_posix()}::{rest}")
    return named


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("full"):
        return
    rest = config.getoption("rest")
    named = _named(config)
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    left_out: dict[str, int] = {}
    for item in items:
        why = left_to_full_tier(item)
        if rest:
            why = None if why is not None or _is_hypothesis(item) else FAST_TIER
        if why is None or any(item.nodeid.startswith(name) for name in named):
            keep.append(item)
        else:
            left_out[why] = left_out.get(why, 0) + 1
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    config.stash[_LEFT_OUT] = left_out
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller says it
        workeroutput[_WORKER_KEY] = left_out


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("promises_to")
    if path:
        marked = {
            item.nodeid: [str(mark.args[0]) for mark in item.iter_markers("promise")]
            for item in session.items
        }
        Path(path).write_text(json.dumps(marked, indent=1))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: every worker collects the same tests; keep what one of them left out."""
    left_out = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
    if left_out is not None:
        node.config.stash[_LEFT_OUT] = left_out


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if config.getoption("full"):
        terminalreporter.write_line("tier: full (every test)")
        return
    left_out = config.stash.get(_LEFT_OUT, {})
    if config.getoption("rest"):
        count = left_out.get(FAST_TIER, 0)
        terminalreporter.write_line(
            f"tier: the rest of the full tier ({count} tests of the fast tier not run again)"
        )
        return
    total = sum(left_out.values())
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(left_out.items()))
    terminalreporter.write_line(
        f"tier: fast; {total} tests left to the full tier"
        + (f" ({reasons})" if reasons else "")
        + ": ./scripts/test --full runs everything"
    )
