"""The log directory is ours or refused; a log path is our regular file or refused.

Each case plants what an attacker (another user, or a careless one) could put
where procwindow writes, and checks that nothing blocks, nothing is written
through it, nothing is disclosed, and the error names the problem.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from procwindow import Supervisor, UnsafePath
from procwindow.core._private import open_private_file, private_dir

from ..core.helpers import until

ROOT = Path(__file__).resolve().parents[2]

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown to another user")


def _nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


async def _run_echo(sup: Supervisor, text: str = "secret output"):
    p = await sup.spawn(["echo", text], session="s", agent="a")
    await asyncio.wait_for(sup.wait(p.id), 10)
    await until(lambda: not p.output_open)
    return p


# -- the directory ---------------------------------------------------------------


def test_a_symlinked_log_dir_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(UnsafePath, match="symlink") as err:
        Supervisor(log_dir=link)
    assert err.value.path == str(link) and err.value.what == "log_dir"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o702])
@pytest.mark.promise("Guarantees and limits: Logs are private")
def test_a_log_dir_others_can_write_is_refused(tmp_path, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    with pytest.raises(UnsafePath, match="writable by others"):
        Supervisor(log_dir=shared)


@needs_root
def test_another_users_log_dir_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, _nobody(), -1)
    with pytest.raises(UnsafePath, match="belongs to uid"):
        Supervisor(log_dir=theirs)


def test_a_log_dir_that_turns_unsafe_before_the_first_spawn_is_refused(tmp_path):
    later = tmp_path / "later"

    async def main():
        async with Supervisor(log_dir=later) as sup:
            later.mkdir()
            later.chmod(0o777)
            with pytest.raises(UnsafePath):
                await sup.spawn(["true"], session="s", agent="a")
            assert sup.procs() == []  # nothing started

    asyncio.run(main())


@pytest.mark.parametrize("planted", ["symlink", "world-writable"])
def test_the_default_log_root_is_checked_at_every_level(tmp_path, monkeypatch, planted):
    state = tmp_path / "xdg"
    state.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted == "symlink":
        (state / "procwindow").symlink_to(elsewhere)
    else:
        (state / "procwindow").mkdir()
        (state / "procwindow").chmod(0o777)

    async def main():
        async with Supervisor() as sup:
            with pytest.raises(UnsafePath, match="state directory"):
                await sup.spawn(["true"], session="s", agent="a")

    asyncio.run(main())
    assert list(elsewhere.iterdir()) == []


def test_the_default_log_dir_is_private_and_removed_on_close(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))

    async def main():
        async with Supervisor(history=False) as sup:
            await _run_echo(sup)
            for level in (tmp_path / "procwindow", tmp_path / "procwindow" / "logs"):
                assert stat.S_IMODE(level.stat().st_mode) == 0o700
            assert stat.S_IMODE(os.stat(sup.log_dir).st_mode) == 0o700
            return sup.log_dir

    log_dir = asyncio.run(main())
    assert not os.path.exists(log_dir)


@pytest.mark.promise("History: Where it lives")
def test_the_history_state_dir_is_private_and_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))

    async def main():
        async with Supervisor() as sup:
            await _run_echo(sup)
            return sup.log_dir

    log_dir = asyncio.run(main())
    assert log_dir == str(tmp_path / "procwindow" / "logs")
    for level in (tmp_path / "procwindow", tmp_path / "procwindow" / "logs"):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "procwindow" / "history.db").stat().st_mode) == 0o600
    # echo writes stdout only: stderr, which gave nothing, has no log file.
    assert sorted(os.listdir(log_dir)) == ["1.journal", "1.stdout.log"]


def test_serve_with_an_unsafe_log_dir_is_a_one_line_error(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    done = subprocess.run(
        [sys.executable, "-m", "procwindow", "serve", "--name", "pl", "--log-dir", str(shared)],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "writable by others" in done.stderr


# -- the files -------------------------------------------------------------------


def _plant(kind: str, log: Path, tmp_path: Path) -> Path | None:
    """Put something that is not our log file at ``log``; return what it points at."""
    outside = tmp_path / "outside"
    outside.write_text("keep me\n")
    if kind.startswith("fifo"):
        os.mkfifo(log)
    elif kind == "symlink":
        log.symlink_to(outside)
    elif kind == "dangling symlink":  # to where the output would be created
        log.symlink_to(tmp_path / "nowhere")
    elif kind == "hard link":
        os.link(outside, log)
    elif kind == "another user's file":
        log.write_text("keep me\n")
        log.chmod(0o644)
        os.chown(log, _nobody(), -1)
    return outside


PLANTED = {
    "fifo with a reader": "not a regular file",
    "fifo": "not a regular file",
    "symlink": "symlink",
    "dangling symlink": "symlink",
    "hard link": "hard links",
    "another user's file": "belongs to uid",
}


@pytest.mark.parametrize("kind", list(PLANTED))
@pytest.mark.promise("Guarantees and limits: Logs are private")
def test_something_planted_at_a_log_path_is_refused_before_the_child_starts(tmp_path, kind):
    if kind == "another user's file" and os.geteuid() != 0:
        pytest.skip("needs root to chown to another user")
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "1.stdout.log"
    outside = _plant(kind, log, tmp_path)
    # A reader holding the FIFO open, as an attacker waiting for the output would.
    reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK) if kind == "fifo with a reader" else None
    marker = tmp_path / "ran"
    try:

        async def main():
            async with Supervisor(log_dir=logs) as sup:
                with pytest.raises(UnsafePath, match=PLANTED[kind]) as err:
                    await asyncio.wait_for(  # the loop never blocks
                        sup.spawn(["touch", str(marker)], session="s", agent="a"), 10
                    )
                assert err.value.path == str(log)
                assert sup.procs() == []
                # Once it is gone, the same id starts cleanly.
                log.unlink()
                p = await _run_echo(sup)
                assert (p.id, p.log_error) == (1, None)

        asyncio.run(main())
        assert not marker.exists()  # the refused command never ran
        if reader is not None:
            try:
                leaked = os.read(reader, 100)
            except BlockingIOError:
                leaked = b""
            assert leaked == b""  # nothing was written into the FIFO
        assert outside is not None and outside.read_text() == "keep me\n"
        assert not (tmp_path / "nowhere").exists()
    finally:
        if reader is not None:
            os.close(reader)


def test_a_fifo_planted_after_the_spawn_is_refused_when_the_log_opens(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    reader_fd: list[int] = []

    async def main():
        async with Supervisor(log_dir=logs) as sup:
            p = await sup.spawn(
                ["sh", "-c", "sleep 0.5; echo secret output"], session="s", agent="a"
            )
            fifo = sup.log_path(p.id, "stdout")
            os.mkfifo(fifo)
            reader_fd.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            await asyncio.wait_for(sup.wait(p.id), 10)  # the loop never blocks
            await until(lambda: not p.output_open)
            assert [line.text for line in sup.read(p.id).lines] == ["secret output"]
            assert p.log_error is not None and "not a regular file" in p.log_error

    try:
        asyncio.run(main())
        try:
            leaked = os.read(reader_fd[0], 100)
        except BlockingIOError:
            leaked = b""
        assert leaked == b""
    finally:
        for fd in reader_fd:
            os.close(fd)


def test_a_precreated_open_log_file_is_narrowed_to_0600(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "1.stdout.log"
    log.write_text("stale\n")
    log.chmod(0o666)

    async def main():
        async with Supervisor(log_dir=logs) as sup:
            p = await _run_echo(sup)
            assert p.log_error is None

    asyncio.run(main())
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert log.read_text() == "secret output\n"


# -- the helpers themselves --------------------------------------------------------


def test_private_dir_creates_missing_levels_0700(tmp_path):
    deep = tmp_path / "a" / "b"
    private_dir(str(deep), what="test dir")
    assert stat.S_IMODE(deep.stat().st_mode) == 0o700


def test_open_private_file_refuses_a_device(tmp_path):
    with pytest.raises(UnsafePath, match="not a regular file"):
        open_private_file("/dev/null", what="test file")
