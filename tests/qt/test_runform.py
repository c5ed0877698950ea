"""The Run dialog's form, without a window: its checks, its errors, the spawn."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import shiboken6
from pytestqt.qtbot import QtBot

from procwindow.core import Supervisor
from procwindow.core.rules import DEFAULT_AGENT, DEFAULT_SESSION
from procwindow.qt import ProcController, ProcWindowModel, RunForm
from procwindow.qt.runform import Field, RunRequest, cwd_placeholder, read_fields, resolve_cwd
from tests.core.helpers import until

from .conftest import QRun
from .test_viewmodel import Window

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

HERE = "/srv/app"


class Seen:
    """What a form and its controller reported."""

    def __init__(self, form: RunForm, controller: ProcController) -> None:
        self.succeeded: list[int] = []
        self.started: list[int] = []
        self.failures: list[str] = []
        self.busy: list[bool] = []
        form.succeeded.connect(self.succeeded.append)
        form.busyChanged.connect(lambda: self.busy.append(form.busy))
        controller.started.connect(self.started.append)
        controller.actionFailed.connect(lambda _id, _action, message: self.failures.append(message))


def errors_of(form: RunForm) -> dict[str, str]:
    """The form's errors that are shown (non-empty), by field."""
    errors = {
        "command": form.commandError,
        "session": form.sessionError,
        "agent": form.agentError,
        "cwd": form.cwdError,
        "general": form.generalError,
    }
    return {field: text for field, text in errors.items() if text}


@pytest.fixture
def form(sup: Supervisor) -> RunForm:
    return RunForm(ProcController(sup))


def controller_of(form: RunForm) -> ProcController:
    return form._controller


# -- reading the fields ------------------------------------------------------------------


def test_fields_that_read_make_a_request() -> None:
    request, errors = read_fields(" web ", "gpt-4.1", "make -C 'my dir' test", "", HERE)
    assert errors == {}
    assert request == RunRequest("web", "gpt-4.1", ("make", "-C", "my dir", "test"), None)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("", "type a command"),
        ("   ", "type a command"),
        ("echo 'unclosed", "cannot read the line: no closing quotation"),
        ("echo \\", "cannot read the line: no escaped character"),
    ],
)
def test_a_command_line_that_does_not_read(line: str, error: str) -> None:
    assert read_fields("s", "a", line, "", HERE) == (None, {Field.COMMAND: error})


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("", "name a {}"),
        ("  ", "name a {}"),
        ("my session", "may not contain spaces"),
        ("a\tb", "may not contain spaces"),
        ("a*", "may not contain '*'"),
        ("a>b*", "may not contain '*' or '>'"),
        ("a> b*", "may not contain '*', '>' or spaces"),
        ("a\x01b", "may not contain control characters"),
    ],
)
def test_a_name_a_scope_cannot_have(name: str, error: str) -> None:
    _, errors = read_fields(name, "a", "true", "", HERE)
    assert errors == {Field.SESSION: error.format("session")}
    _, errors = read_fields("s", name, "true", "", HERE)
    assert errors == {Field.AGENT: error.format("agent").replace("a agent", "an agent")}


def test_every_field_at_fault_has_its_error() -> None:
    request, errors = read_fields("", "a b", "", "/nowhere", HERE)
    assert request is None
    assert errors == {
        Field.COMMAND: "type a command",
        Field.SESSION: "name a session",
        Field.AGENT: "may not contain spaces",
    }


def test_the_directory_expands_home_and_starts_relative_paths_here() -> None:
    home = os.path.expanduser("~")
    assert resolve_cwd("", HERE) is None
    assert resolve_cwd("  ", HERE) is None
    assert resolve_cwd("~", HERE) == home
    assert resolve_cwd("~/src", HERE) == os.path.join(home, "src")
    assert resolve_cwd("build", HERE) == "/srv/app/build"
    assert resolve_cwd("../lib/./x/", HERE) == "/srv/lib/x"
    assert resolve_cwd(" /tmp ", HERE) == "/tmp"
    assert read_fields("s", "a", "ls", "~", HERE)[0] == RunRequest("s", "a", ("ls",), home)
    # The empty field says where that is (home as ~).
    assert cwd_placeholder("/srv/app") == "/srv/app  (relative paths start here)"
    assert cwd_placeholder(os.path.join(home, "proj")).startswith("~/proj  ")


# -- the form ----------------------------------------------------------------------------


def test_open_fills_in_the_scope_and_clears_the_errors(form: RunForm, qtbot: QtBot) -> None:
    form.submit("", "", "", "")
    assert set(errors_of(form)) == {"command", "session", "agent"}
    with qtbot.waitSignal(form.openRequested):
        form.open("", "")
    assert (form.session, form.agent) == (DEFAULT_SESSION, DEFAULT_AGENT)
    assert errors_of(form) == {}
    form.open("web", "api")
    assert (form.session, form.agent) == ("web", "api")
    assert form.cwdPlaceholder == cwd_placeholder(os.getcwd())


def test_a_command_starts_and_the_form_says_so(
    sup: Supervisor, qrun: QRun, form: RunForm, tmp_path: Path
) -> None:
    seen = Seen(form, controller_of(form))
    form.submit("web", "api", "sh -c 'echo hi; pwd'", str(tmp_path))
    assert form.busy
    qrun(form.wait_idle())
    assert not form.busy and seen.busy == [True, False]
    [proc_id] = seen.succeeded
    assert seen.started == [proc_id] and seen.failures == [] and errors_of(form) == {}
    proc = sup.get(proc_id)
    assert (proc.session, proc.agent, proc.cwd) == ("web", "api", str(tmp_path))
    assert proc.argv == ("sh", "-c", "echo hi; pwd")
    qrun(sup.wait(proc_id))
    assert [line.text for line in sup.read(proc_id).lines] == ["hi", str(tmp_path)]


def test_a_command_on_a_terminal(sup: Supervisor, qrun: QRun, form: RunForm) -> None:
    seen = Seen(form, controller_of(form))
    form.pty = True
    form.submit("web", "api", "sh -c 'test -t 0 && test -t 1 && echo tty'", "")
    qrun(form.wait_idle())
    [proc_id] = seen.succeeded
    assert sup.get(proc_id).options.pty == (24, 80)
    qrun(sup.wait(proc_id))
    assert [line.text for line in sup.read(proc_id).lines] == ["tty"]


@pytest.mark.parametrize(
    ("line", "cwd", "field", "error"),
    [
        ("no-such-command-procwindow -x", "", "command", "command not found: {cmd!r}"),
        ("./notes.txt", "{tmp}", "command", "not executable: './notes.txt' (permission denied)"),
        ("{tmp}", "", "command", "not executable: {tmp!r} (is a directory)"),
        ("true", "{tmp}/nope", "cwd", "no such directory: {tmp}/nope"),
        ("true", "{tmp}/notes.txt", "cwd", "not a directory: {tmp}/notes.txt"),
        ("true", "nope-procwindow", "cwd", "no such directory: {here}/nope-procwindow"),
    ],
)
def test_a_failed_spawn_shows_beside_the_field_at_fault(
    sup: Supervisor,
    qrun: QRun,
    form: RunForm,
    tmp_path: Path,
    line: str,
    cwd: str,
    field: str,
    error: str,
) -> None:
    (tmp_path / "notes.txt").write_text("not a program")
    values = {"tmp": str(tmp_path), "here": os.getcwd(), "cmd": "no-such-command-procwindow"}
    seen = Seen(form, controller_of(form))
    form.submit("web", "api", line.format(**values), cwd.format(**values))
    qrun(form.wait_idle())
    assert errors_of(form) == {field: error.format(**values)}
    assert not form.busy
    # Nothing started, and the controller's footer message is not used.
    assert seen.succeeded == seen.started == seen.failures == []
    assert sup.procs() == []


def test_editing_a_field_clears_its_error(form: RunForm) -> None:
    form.submit("a b", "c*", "", "")
    assert set(errors_of(form)) == {"command", "session", "agent"}
    form.edited("session")
    assert set(errors_of(form)) == {"command", "agent"}
    form.edited("cwd")  # a field without an error: nothing else clears
    assert set(errors_of(form)) == {"command", "agent"}
    form.edited("command")
    form.edited("agent")
    assert errors_of(form) == {}


def test_any_other_failure_is_the_general_error(
    sup: Supervisor, qrun: QRun, form: RunForm, caplog: pytest.LogCaptureFixture
) -> None:
    controller = controller_of(form)

    async def broken(argv: Sequence[str], **_: object) -> int:
        raise RuntimeError("the supervisor's socket went away")

    original = controller.spawn
    controller.spawn = broken  # type: ignore[method-assign]
    form.submit("web", "api", "true", "")
    qrun(form.wait_idle())
    assert errors_of(form) == {"general": "cannot run true: the supervisor's socket went away"}
    assert "run true failed" in caplog.text
    # Editing any field clears the general error.
    form.edited("command")
    assert errors_of(form) == {}

    # A supervisor that is closing says so, under the fields.
    controller.spawn = original  # type: ignore[method-assign]
    qrun(sup.close())
    form.submit("web", "api", "true", "")
    qrun(form.wait_idle())
    assert list(errors_of(form)) == ["general"]
    assert errors_of(form)["general"].startswith("this supervisor is clos")  # closing, closed


def test_ok_while_a_spawn_is_in_flight_does_nothing(
    sup: Supervisor, qrun: QRun, form: RunForm
) -> None:
    controller = controller_of(form)
    spawn = controller.spawn
    release = asyncio.Event()

    async def held(argv: Sequence[str], **kwargs: object) -> int:
        await release.wait()
        return await spawn(argv, **kwargs)  # type: ignore[arg-type]

    controller.spawn = held  # type: ignore[method-assign]
    seen = Seen(form, controller)
    form.submit("web", "api", "true", "")
    qrun(asyncio.sleep(0.05))
    assert form.busy
    form.submit("web", "api", "false", "")
    form.submit("", "", "", "")  # not even checked while busy
    assert errors_of(form) == {}
    release.set()
    qrun(form.wait_idle())
    assert not form.busy
    assert len(seen.succeeded) == 1 and sup.get(seen.succeeded[0]).argv == ("true",)


def test_the_form_outliving_its_window_reports_to_no_one(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    form = RunForm(controller)
    form.submit("web", "api", "true", "")
    task = form._task
    assert task is not None
    shiboken6.delete(form)
    qrun(asyncio.wait({task}))
    assert task.exception() is None
    assert len(sup.procs("web", "api")) == 1


# -- the windows' view-models ------------------------------------------------------------


def test_a_proc_window_runs_in_its_scope_and_streams_the_new_proc(
    sup: Supervisor, qrun: QRun, qtbot: QtBot
) -> None:
    first = qrun(sup.spawn(["sleep", "30"], session="web", agent="api"))
    window = Window(sup, "web", "api")
    try:
        model: ProcWindowModel = window.model
        assert model.streamingProcId == first.id
        form = model.runForm
        with qtbot.waitSignal(form.openRequested):
            model.requestRun()
        assert (form.session, form.agent) == ("web", "api")
        form.submit(form.session, form.agent, sys.executable + " -c pass", "")
        qrun(form.wait_idle())
        qrun(until(lambda: model.streamingProcId != first.id, what="the new proc streaming"))
        new = max(p.id for p in sup.procs("web", "api"))
        assert model.streamingProcId == model.currentProcId == new
    finally:
        window.close()

    # A session's window opens the form on the default agent.
    session_window = Window(sup, "web")
    try:
        session_window.model.requestRun()
        assert (session_window.model.runForm.session, session_window.model.runForm.agent) == (
            "web",
            DEFAULT_AGENT,
        )
    finally:
        session_window.close()
