"""FailureNotifier: a proc that fails while no window has the focus is told to the
desktop, through a real notifier command (a stand-in ``notify-send`` on PATH that
records its arguments), with real failing children."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from procwindow.core import Supervisor
from procwindow.qt.notify import FailureNotifier, notifier_command
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")


@pytest.fixture
def notify_send(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``notify-send`` first on PATH that appends its arguments to a file, one
    notification per line (fields joined by `|`). Returns the file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "notifications.txt"
    script = bin_dir / "notify-send"
    script.write_text(
        "#!/bin/sh\n"
        f'out="{record}"\n'
        'line=""\n'
        'for a in "$@"; do line="$line|$a"; done\n'
        'printf "%s\\n" "$line" | tr "\\n" " " >> "$out"\n'
        'printf "\\n" >> "$out"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def notifications(record: Path) -> list[list[str]]:
    if not record.exists():
        return []
    return [line.strip().split("|")[1:] for line in record.read_text().splitlines() if line]


def test_the_notifier_command_is_the_desktops(notify_send: Path) -> None:
    command = notifier_command()
    assert command is not None
    assert command[0] == str(notify_send.parent / "bin" / "notify-send")
    assert "--app-name=procwindow" in command


def test_no_notifier_without_a_desktop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sup: Supervisor, qrun: QRun
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither notify-send nor gdbus
    assert notifier_command() is None

    async def scenario() -> None:
        notifier = FailureNotifier(sup, active=lambda: False)
        assert not notifier.available
        notifier.close()

    qrun(scenario())


@pytest.mark.promise("The window: Notifications")
def test_a_failure_in_the_background_is_notified_once_per_burst(
    notify_send: Path, sup: Supervisor, qrun: QRun
) -> None:
    focused = [False]

    async def scenario() -> None:
        notifier = FailureNotifier(sup, active=lambda: focused[0], coalesce_ms=300)
        assert notifier.available
        sent: list[tuple[str, str]] = []
        notifier.sent.connect(lambda summary, body: sent.append((summary, body)))

        # Exiting 0 and being terminated are not failures.
        ok = await sup.spawn(["true"], session="build", agent="cc")
        stopped = await sup.spawn(["sleep", "30"], session="build", agent="cc")
        await sup.wait(ok.id)
        await sup.term(stopped.id)
        # One failure in the background: one notification naming it.
        bad = await sup.spawn(py("import sys; sys.exit(2)"), session="build", agent="cc")
        await sup.wait(bad.id)
        await until(lambda: notifications(notify_send), what="the notification")
        [[*options, summary, body]] = notifications(notify_send)
        assert "--app-name=procwindow" in options
        assert summary.endswith("failed (2)") and "sys.exit(2)" in summary
        assert body == f"build / cc · process {bad.id}"
        assert sent == [(summary, body)]

        # Three at once: one notification that counts them.
        procs = [
            await sup.spawn(["sh", "-c", f"exit {n}"], session="web", agent=f"a{n}")
            for n in (3, 4, 5)
        ]
        for p in procs:
            await sup.wait(p.id)
        await until(lambda: len(notifications(notify_send)) == 2, what="the second one")
        summary, body = notifications(notify_send)[1][-2:]
        assert summary == "3 processes failed"
        assert body.count("failed (") == 3 and "web / a4" in body

        # While a window has the focus, nothing is sent.
        focused[0] = True
        again = await sup.spawn(["sh", "-c", "exit 7"], session="web", agent="a")
        await sup.wait(again.id)
        await asyncio.sleep(0.6)
        assert len(notifications(notify_send)) == 2
        notifier.close()
        await asyncio.sleep(0.1)  # the notifier commands end

    qrun(scenario())


@pytest.mark.promise("The window: Notifications")
def test_a_timeout_is_a_failure(notify_send: Path, sup: Supervisor, qrun: QRun) -> None:
    async def scenario() -> None:
        notifier = FailureNotifier(sup, active=lambda: False, coalesce_ms=100)
        slow = await sup.spawn(["sleep", "30"], session="s", agent="a", timeout=0.2)
        await sup.wait(slow.id)
        await until(lambda: notifications(notify_send), what="the notification")
        assert notifications(notify_send)[0][-2] == "sleep 30 timed out (SIGTERM)"
        notifier.close()
        await asyncio.sleep(0.1)

    qrun(scenario())


@pytest.mark.promise("The window: Notifications")
def test_a_notification_names_its_host_when_told_one(
    notify_send: Path, sup: Supervisor, qrun: QRun
) -> None:
    async def scenario() -> None:
        notifier = FailureNotifier(sup, active=lambda: False, coalesce_ms=100)
        notifier.host_label = "ci on build"  # the window shows several supervisors
        bad = await sup.spawn(["sh", "-c", "exit 3"], session="s", agent="a")
        await sup.wait(bad.id)
        await until(lambda: notifications(notify_send), what="the notification")
        summary, body = notifications(notify_send)[0][-2:]
        assert summary == "ci on build: sh -c 'exit 3' failed (3)"
        assert body == f"s / a · process {bad.id}"
        notifier.close()
        await asyncio.sleep(0.1)

    qrun(scenario())
