"""Bad input gets a named error and leaves nothing behind."""

from __future__ import annotations

import pytest

from procwindow import (
    CommandNotFound,
    CwdMissing,
    InvalidArgv,
    InvalidPattern,
    InvalidScope,
    NotExecutable,
    ProcNotFound,
    ProcRunning,
    ProcwindowError,
    Supervisor,
    UnsupportedPlatform,
)

from .helpers import until


def _check_nothing_registered(sup):
    assert sup.procs() == []


@pytest.mark.parametrize(
    ("argv", "error", "fact"),
    [
        (["nmp", "install"], CommandNotFound, "nmp"),
        (["./no/such/tool"], CommandNotFound, "./no/such/tool"),
        ([], InvalidArgv, "empty"),
        ([""], InvalidArgv, "argv[0] must not be empty"),
        (["echo", "a\0b"], InvalidArgv, "NUL"),
        (["echo", 3], InvalidArgv, "argv[1] is an int"),
        ("echo hi", InvalidArgv, "sequence of strings"),
        (["/"], NotExecutable, "is a directory"),
    ],
)
def test_spawn_errors_are_named_and_leave_nothing(run, tmp_path, argv, error, fact):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(error) as caught:
                await sup.spawn(argv, session="s", agent="a")
            assert fact in str(caught.value)
            assert isinstance(caught.value, ProcwindowError)
            _check_nothing_registered(sup)
            # the next spawn still works and gets id 1: a failure burns no id
            p = await sup.spawn(["true"], session="s", agent="a")
            assert p.id == 1
            await sup.wait(p.id)

    run(main())


def test_missing_cwd_is_not_a_missing_command(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(CwdMissing) as caught:
                await sup.spawn(["true"], session="s", agent="a", cwd=tmp_path / "nope")
            assert caught.value.cwd == str(tmp_path / "nope")
            (tmp_path / "file").write_text("")
            with pytest.raises(CwdMissing, match="not a directory"):
                await sup.spawn(["true"], session="s", agent="a", cwd=tmp_path / "file")
            with pytest.raises(CommandNotFound) as nf:
                await sup.spawn(["nmp"], session="s", agent="a", cwd=tmp_path)
            assert nf.value.command == "nmp"
            _check_nothing_registered(sup)

    run(main())


def test_not_executable_file_and_exec_format_error(run, tmp_path):
    script = tmp_path / "script"
    script.write_text("echo hi\n")

    async def main():
        async with Supervisor(log_dir=tmp_path / "logs") as sup:
            script.chmod(0o644)  # no x bit at all: refused even for root
            with pytest.raises(NotExecutable, match="permission denied") as caught:
                await sup.spawn([str(script)], session="s", agent="a")
            assert caught.value.path == str(script)
            garbage = tmp_path / "garbage"
            garbage.write_bytes(b"\x7fELF\x00garbage")
            garbage.chmod(0o755)
            with pytest.raises(NotExecutable, match="exec format error"):
                await sup.spawn([str(garbage)], session="s", agent="a")
            _check_nothing_registered(sup)

    run(main())


def test_huge_argv_is_invalid_argv(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(InvalidArgv, match="E2BIG"):
                await sup.spawn(["echo"] + ["x" * 100_000] * 40, session="s", agent="a")
            _check_nothing_registered(sup)

    run(main())


@pytest.mark.parametrize("name", ["", "a*", "a b", "*", ">", "x\n"])
def test_invalid_scope_names(run, tmp_path, name):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(InvalidScope):
                await sup.spawn(["true"], session=name, agent="a")
            with pytest.raises(InvalidScope):
                await sup.spawn(["true"], session="s", agent=name)

    run(main())


def test_env_errors_and_env_overrides(run, tmp_path, monkeypatch):
    monkeypatch.setenv("PW_INHERITED", "yes")
    monkeypatch.setenv("PW_REMOVED", "yes")

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(InvalidArgv, match="variable name"):
                await sup.spawn(["true"], session="s", agent="a", env={"A=B": "x"})
            with pytest.raises(InvalidArgv, match="NUL"):
                await sup.spawn(["true"], session="s", agent="a", env={"A": "x\0"})
            p = await sup.spawn(
                ["sh", "-c", 'echo "$PW_INHERITED|$PW_ADDED|${PW_REMOVED-unset}"'],
                session="s",
                agent="a",
                env={"PW_ADDED": "added", "PW_REMOVED": None},
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert [ln.text for ln in sup.read(p.id).lines] == ["yes|added|unset"]

    run(main())


def test_shell_metacharacters_reach_the_child_literally(run, tmp_path):
    nasty = ["$(touch pwned)", "`id`", "a; rm -rf /", "*", "'\"", "a\tb", "x > y", "&& echo no"]

    async def main():
        async with Supervisor(log_dir=tmp_path / "logs") as sup:
            p = await sup.spawn(
                ["python3", "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", *nasty],
                session="s",
                agent="a",
                cwd=tmp_path,
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            import json

            assert json.loads(sup.read(p.id).lines[0].text) == nasty
            assert not (tmp_path / "pwned").exists()

    run(main())


def test_unknown_id_running_dismiss_and_bad_pattern(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            for call in (
                lambda: sup.get(42),
                lambda: sup.read(42),
                lambda: sup.dismiss(42),
                lambda: sup.stats(42),
            ):
                with pytest.raises(ProcNotFound) as caught:
                    call()
                assert caught.value.proc_id == 42
            for coro in (sup.term, sup.kill, sup.wait, sup.interrupt, sup.restart):
                with pytest.raises(ProcNotFound):
                    await coro(42)
            p = await sup.spawn(["sleep", "60"], session="s", agent="a")
            with pytest.raises(ProcRunning, match="still running"):
                sup.dismiss(p.id)
            assert sup.get(p.id) is p  # the refusal lost nothing
            with pytest.raises(InvalidPattern):
                sup.subscribe("session..x")
            await sup.kill(p.id)
            sup.dismiss(p.id)
            with pytest.raises(ProcNotFound):
                sup.dismiss(p.id)

    run(main())


def test_refuses_other_platforms_with_a_clear_message(monkeypatch):
    import sys

    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(UnsupportedPlatform, match="Linux only"):
        Supervisor()
