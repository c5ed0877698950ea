"""The built-in demo workspace: two sessions, three agents, real commands.

``procwindow`` with no arguments starts these so the window has something to show:

=========  =======  =========  ==================================================
session    agent    tool       what it does
=========  =======  =========  ==================================================
webapp     builder  shell      a chatty watch-mode build: ANSI colours, a ``\\r``
                               progress bar, a rebuild every few seconds
webapp     builder  shell      a dev server that ignores SIGTERM (Term escalates)
webapp     tester   shell      a test run that fails with exit status 1
docs       writer   web_fetch  a fetch that finishes cleanly
docs       writer   shell      a docs build that writes warnings to stderr
=========  =======  =========  ==================================================

Every job is this module run as a script by the current interpreter
(``python -u -m procwindow.demo build``), so the demo needs nothing but Python.
This file imports only the standard library at the top: it is also the children's
``__main__``.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from procwindow.core import Proc, Supervisor

__all__ = ["DEMO_SCOPES", "DemoJob", "demo_jobs", "start_demo"]

#: The sessions of the demo workspace and their agents, in tree order.
DEMO_SCOPES: dict[str, list[str]] = {
    "webapp": ["builder", "tester"],
    "docs": ["writer"],
}


@dataclass(frozen=True, slots=True)
class DemoJob:
    """One command of the demo workspace."""

    name: str
    session: str
    agent: str
    tool: str


#: In start order: the window lists the newest first.
DEMO_JOBS: tuple[DemoJob, ...] = (
    DemoJob("build", "webapp", "builder", "shell"),
    DemoJob("server", "webapp", "builder", "shell"),
    DemoJob("test", "webapp", "tester", "shell"),
    DemoJob("fetch", "docs", "writer", "web_fetch"),
    DemoJob("docs", "docs", "writer", "shell"),
)


def demo_jobs() -> tuple[DemoJob, ...]:
    """The demo's jobs, in the order they start."""
    return DEMO_JOBS


def _child_env() -> dict[str, str | None]:
    # The children run this module with ``-m``: make the package importable from a
    # checkout too, and let ``python`` on PATH be this interpreter, so the command
    # line reads ``python -u -m procwindow.demo build``.
    package_parent = str(Path(__file__).resolve().parent.parent)
    python_path = os.environ.get("PYTHONPATH")
    bin_dir = str(Path(sys.executable).parent)
    return {
        "PYTHONPATH": package_parent + (os.pathsep + python_path if python_path else ""),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", os.defpath),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
    }


def job_argv(name: str) -> list[str]:
    """The argv that runs demo job ``name``."""
    return [Path(sys.executable).name, "-u", "-m", "procwindow.demo", name]


async def start_demo(supervisor: Supervisor) -> list[Proc]:
    """Start every demo job on ``supervisor``; return their procs in start order."""
    env = _child_env()
    procs = []
    for job in DEMO_JOBS:
        procs.append(
            await supervisor.spawn(
                job_argv(job.name), session=job.session, agent=job.agent, tool=job.tool, env=env
            )
        )
    return procs


# -- the jobs themselves (run in the child) -------------------------------------

RESET, BOLD, DIM = "\x1b[0m", "\x1b[1m", "\x1b[2m"
RED, GREEN, YELLOW, BLUE, MAGENTA, CYAN = (f"\x1b[{n}m" for n in range(31, 37))
ORANGE = "\x1b[38;5;208m"
TEAL = "\x1b[38;2;78;201;176m"

_MODULES = (
    "src/main.ts",
    "src/app/router.ts",
    "src/app/store.ts",
    "src/components/Table.tsx",
    "src/components/OutputPane.tsx",
    "src/components/Gauge.tsx",
    "src/lib/format.ts",
    "src/lib/ansi.ts",
    "styles/theme.css",
)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _progress(label: str, width: int = 28, steps: int = 14, delay: float = 0.08) -> None:
    for step in range(steps + 1):
        filled = width * step // steps
        bar = "█" * filled + "░" * (width - filled)
        sys.stdout.write(f"\r{label} {CYAN}{bar}{RESET} {100 * step // steps:3d}%")
        sys.stdout.flush()
        _sleep(delay)
    sys.stdout.write("\n")


def build() -> int:
    """A watch-mode build: colours, a progress bar, a rebuild every few seconds."""
    rng = random.Random(7)
    print(f"{BOLD}vite{RESET} v5.2.0 {DIM}building for development…{RESET}")
    for rebuild in range(1, 400):
        if rebuild > 1:
            changed = rng.choice(_MODULES)
            print(f"{DIM}[watch]{RESET} {YELLOW}change{RESET} {changed}")
        started = time.monotonic()
        for module in _MODULES:
            print(f"  {GREEN}✓{RESET} {CYAN}{module}{RESET} {DIM}{rng.randint(1, 48)} kB{RESET}")
            _sleep(0.05)
        if rebuild % 3 == 0:
            print(
                f"  {ORANGE}warning{RESET} src/lib/ansi.ts:42:7 "
                f"'palette' is assigned a value but never used"
            )
        _progress("  bundling")
        took = (time.monotonic() - started) * 1000
        print(
            f"{TEAL}{BOLD}built{RESET} in {took:.0f} ms {DIM}·{RESET} "
            f"{MAGENTA}dist/assets/index.js{RESET} {rng.randint(180, 260)}.{rng.randint(0, 9)} kB"
        )
        _sleep(2.5)
    return 0


def server() -> int:
    """A dev server that ignores SIGTERM: Term waits, then escalates to SIGKILL."""

    def ignore(signum: int, frame: object) -> None:
        print(f"{YELLOW}SIGTERM received: draining connections (not exiting){RESET}")

    signal.signal(signal.SIGTERM, ignore)
    rng = random.Random(11)
    print(f"{GREEN}➜{RESET}  {BOLD}Local:{RESET}   {CYAN}http://127.0.0.1:8000/{RESET}")
    print(f"{GREEN}➜{RESET}  {DIM}press Ctrl+C to stop{RESET}")
    paths = ("/", "/api/procs", "/api/procs/5/output", "/assets/index.js", "/favicon.ico")
    while True:
        _sleep(1.2)
        path = rng.choice(paths)
        status = rng.choices((200, 304, 404, 500), weights=(70, 20, 8, 2))[0]
        colour = GREEN if status < 300 else BLUE if status < 400 else YELLOW
        if status >= 500:
            colour = RED
        ms = rng.randint(1, 90)
        print(f"{DIM}{time.strftime('%H:%M:%S')}{RESET} GET {path} {colour}{status}{RESET} {ms}ms")


def test() -> int:
    """A test run that fails: one red test, exit status 1."""
    names = (
        "test_spawn_echo",
        "test_term_escalates",
        "test_output_order",
        "test_filter_regex",
        "test_copy_all",
        "test_runtime_format",
        "test_dismiss_running_refused",
    )
    print(f"{BOLD}============ test session starts ============{RESET}")
    print("collected 7 items")
    print()
    for name in names:
        _sleep(0.25)
        if name == "test_output_order":
            print(f"tests/test_app.py::{name} {RED}FAILED{RESET}")
        else:
            print(f"tests/test_app.py::{name} {GREEN}PASSED{RESET}")
    print()
    print(f"{RED}_______________ test_output_order _______________{RESET}")
    print("    def test_output_order():")
    print("        lines = read_all(proc)")
    print(f"{RED}>       assert [l.seq for l in lines] == sorted(seqs){RESET}")
    print(f"{RED}E       assert [1, 3, 2] == [1, 2, 3]{RESET}")
    print(f"{RED}E         At index 1 diff: 3 != 2{RESET}")
    print()
    print(
        f"{RED}FAILED{RESET} tests/test_app.py::test_output_order - assert [1, 3, 2] == [1, 2, 3]"
    )
    print(f"{RED}======= {BOLD}1 failed{RESET}{RED}, {GREEN}6 passed{RED} in 1.84s ======={RESET}")
    return 1


def fetch() -> int:
    """A fetch that finishes cleanly."""
    url = "https://docs.python.org/3/library/asyncio-subprocess.html"
    print(f"GET {url}")
    _sleep(0.6)
    print(f"{GREEN}200 OK{RESET} text/html; charset=utf-8 · 84.2 KiB in 412 ms")
    _sleep(0.3)
    print("extracted 12 sections, 3 code samples")
    print("saved to .cache/fetch/asyncio-subprocess.md")
    return 0


def docs() -> int:
    """A docs build that writes its warnings to stderr."""
    pages = ("index", "quickstart", "supervisor", "window", "embedding", "changelog")
    print("Running Sphinx v7.3.7")
    for i, page in enumerate(pages):
        _sleep(0.8)
        print(f"reading sources... [{100 * (i + 1) // len(pages):3d}%] {page}")
        if page in ("window", "embedding"):
            print(
                f"docs/{page}.rst:{12 + 7 * i}: WARNING: undefined label: 'proc-window'",
                file=sys.stderr,
            )
    _sleep(0.5)
    print("writing output... [100%] changelog", flush=True)
    print("build succeeded, 2 warnings.", file=sys.stderr)
    print("The HTML pages are in _build/html.")
    return 0


_JOBS: dict[str, Callable[[], int]] = {
    "build": build,
    "server": server,
    "test": test,
    "fetch": fetch,
    "docs": docs,
}


def _main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in _JOBS:
        print(f"usage: python -m procwindow.demo {{{','.join(_JOBS)}}}", file=sys.stderr)
        return 2
    try:
        return _JOBS[argv[0]]()
    except (KeyboardInterrupt, BrokenPipeError):
        return 130


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
