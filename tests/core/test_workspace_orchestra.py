"""Workspaces that start in order and heal, with real processes on both loops:
dependencies and their conditions, skipped dependents, crash loops with
backoff, liveness, ordered and bounded shutdown, and graphs refused before
anything starts."""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from pathlib import Path

import pytest

from procwindow import (
    Backoff,
    Command,
    Condition,
    Dependency,
    EventKind,
    ExitReason,
    InvalidWorkspace,
    Liveness,
    Phase,
    PhaseEvent,
    Ready,
    Supervisor,
    Workspace,
    WorkspaceConflict,
    WorkspaceNotFound,
    command_state,
)
from procwindow.core._orchestra import STOP_SLACK, commands_table, idx_rows

from ..tiers import scaled
from .helpers import IGNORES_TERM_READY, ignores_term, py, until


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listener(port: int, delay: float = 0.0, before: str = "") -> tuple[str, ...]:
    """A TCP server on 127.0.0.1:``port`` that starts listening after ``delay`` s."""
    return tuple(
        py(
            f"""
            import socket, sys, time
            {before}
            time.sleep({delay})
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", {port}))
            s.listen(64)
            print("listening", flush=True)
            time.sleep(60)
            """
        )
    )


def api_server(db_port: int, port: int) -> tuple[str, ...]:
    """An API that needs its database: it exits 7 unless the db's port answers."""
    check = (
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {db_port}), timeout=2).close()\n"
        "except OSError:\n"
        "    sys.exit(7)\n"
        "print('db answered', flush=True)"
    )
    return listener(port, before=check.replace("\n", "\n            "))


def on_term_log(name: str, log: Path, linger: float = 0.2) -> tuple[str, ...]:
    """A child that prints ``up`` and, on SIGTERM, appends ``name time`` to ``log``,
    lingers ``linger`` s and exits 0."""
    return tuple(
        py(
            f"""
            import signal, sys, time
            def bye(*_):
                with open({str(log)!r}, "a") as f:
                    f.write({name!r} + " " + repr(time.time()) + "\\n")
                time.sleep({linger})
                sys.exit(0)
            signal.signal(signal.SIGTERM, bye)
            print("up", flush=True)
            while True:
                time.sleep(1)
            """
        )
    )


def phases(events: list[PhaseEvent], command: str) -> list[Phase]:
    """The phases a command went through, repeats folded."""
    out: list[Phase] = []
    for ev in events:
        if ev.command == command and (not out or out[-1] is not ev.phase):
            out.append(ev.phase)
    return out


def drain(sub) -> list:
    out = []
    while (ev := sub.get_nowait()) is not None:
        out.append(ev)
    return out


# -- dependencies ------------------------------------------------------------------


@pytest.mark.promise("Workspaces: depends_on")
@pytest.mark.promise("Workspaces: From the library")
def test_a_stack_starts_in_dependency_order(run, tmp_path):
    """A db that listens after a delay, an API that needs its port, a web command
    that needs the API: each starts once what it waits for is ready, and a
    command of its own starts at once."""
    db_port, api_port = free_port(), free_port()
    ws = Workspace(
        [
            Command(
                "stack",
                "infra",
                listener(db_port, delay=0.6),
                name="db",
                ready=Ready(port=db_port, interval=0.05),
            ),
            Command(
                "stack",
                "backend",
                api_server(db_port, api_port),
                name="api",
                depends_on={"db": "ready"},
                ready=Ready(port=api_port, interval=0.05),
            ),
            Command(
                "stack",
                "frontend",
                tuple(py("import time; print('web up', flush=True); time.sleep(60)")),
                name="web",
                depends_on={"api": "ready"},
                ready="web up",
            ),
            Command("stack", "tools", ("sleep", "60"), name="lint"),
        ],
        name="stack",
    )

    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=2) as sup:
            sub = sup.subscribe("session.stack.>")
            started = await ws.start(sup)
            assert sup.workspaces == [started]
            assert started.state("db").phase is Phase.STARTING
            assert started.state("lint").phase is Phase.RUNNING
            api = started.state("api")
            assert api.phase is Phase.WAITING
            assert api.proc_id is None
            assert api.waiting_for == (Dependency("db", Condition.READY),)
            assert api.describe() == "waiting for db (ready)"
            assert started.state("web").describe() == "waiting for api (ready)"
            assert "waiting for api (ready)" in commands_table(started.states())
            rows = idx_rows(started.states())
            assert rows.count("-\twaiting\t-1\t") == 2

            await started.wait_started(timeout=30)
            await until(lambda: started.state("web").phase is Phase.READY, 30, "web ready")
            procs = {st.name: sup.get(st.proc_id) for st in started.states()}
            await sup.wait_for(procs["api"].id, "db answered", timeout=10)
            assert command_state(sup, procs["api"].id).name == "api"
            events = drain(sub)
            ready_at = {ev.proc_id: ev.time for ev in events if ev.kind is EventKind.READY}
            assert procs["api"].started_at >= ready_at[procs["db"].id]
            assert procs["web"].started_at >= ready_at[procs["api"].id]
            # Independent of the others: it did not wait for the db's delay.
            assert procs["lint"].started_at < ready_at[procs["db"].id]
            flow = [ev for ev in events if isinstance(ev, PhaseEvent)]
            assert phases(flow, "api") == [Phase.WAITING, Phase.STARTING, Phase.READY]
            assert phases(flow, "web") == [Phase.WAITING, Phase.STARTING, Phase.READY]
            first = next(ev for ev in flow if ev.command == "api")
            assert first.proc_id == 0  # nothing ran yet
            assert first.topic == "session.stack.agent.backend.proc.phase"
            assert first.waiting_for == (("db", "ready"),)
            assert first.workspace == "stack"
            sub.close()

    run(main())


@pytest.mark.promise("Workspaces: depends_on")
def test_a_failing_dependency_leaves_its_dependents_skipped(run, tmp_path):
    silent_port = free_port()
    ws = Workspace(
        [
            Command("s", "db", tuple(py("import sys; sys.exit(3)")), name="migrate"),
            Command(
                "s",
                "api",
                ("sleep", "60"),
                name="api",
                depends_on={"migrate": "completed_successfully"},
            ),
            Command("s", "web", ("sleep", "60"), name="web", depends_on=["api"]),
            Command(
                "s",
                "db",
                ("sleep", "60"),
                name="db",
                ready=Ready(port=silent_port, interval=0.05, timeout=0.5),
            ),
            Command("s", "worker", ("sleep", "60"), name="worker", depends_on={"db": "ready"}),
            Command("s", "cron", ("true",), name="cron"),
            Command("s", "report", ("true",), name="report", depends_on={"cron": "completed"}),
        ]
    )

    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=1) as sup:
            started = await ws.start(sup)
            await started.wait_started(timeout=30)
            api, web, worker = (started.state(n) for n in ("api", "web", "worker"))
            assert api.phase is Phase.SKIPPED
            assert api.detail == (
                "migrate did not complete successfully: it exited with code 3 (failed)"
            )
            assert api.describe().startswith("skipped: migrate did not complete successfully")
            assert web.phase is Phase.SKIPPED
            assert web.detail.startswith("api never started (it was skipped")
            assert worker.phase is Phase.SKIPPED
            assert worker.detail == (
                f"db never became ready: its check (port 127.0.0.1:{silent_port}) gave up"
                " after 0.5 s"
            )
            for st in (api, web, worker):
                assert st.proc_id is None and st.runs == ()
            assert started.state("migrate").phase is Phase.FAILED
            # The db runs on, never ready; nothing of the skipped ones ever ran.
            assert started.state("db").phase is Phase.RUNNING
            await until(lambda: started.state("report").phase is Phase.COMPLETED, 20)
            assert {p.argv[0] for p in sup.procs()} == {ws.commands[0].argv[0], "sleep", "true"}
            assert len(sup.procs()) == 4  # migrate, db, cron, report
            rows = idx_rows(started.states())
            assert rows.count("-\tskipped\t-1\t") == 3

    run(main())


# -- restart policies ----------------------------------------------------------------


@pytest.mark.promise("Workspaces: restart")
def test_a_crash_loop_backs_off_and_gives_up(run, tmp_path):
    crash = Command(
        "s",
        "a",
        tuple(py("import sys; sys.exit(1)")),
        name="crash",
        restart="on-failure",
        backoff=Backoff(initial=0.2, factor=2.0, cap=5.0),
        max_restarts=4,
    )

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe("session.s.agent.a.proc.phase")
            cpu0, wall0 = time.process_time(), time.monotonic()
            started = await Workspace([crash]).start(sup)
            await until(lambda: started.state("crash").phase is Phase.FAILED, 30, "gave up")
            cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
            st = started.state("crash")
            assert st.restarts == 4
            assert len(st.runs) == 5  # each restart a new run, linked in order
            assert list(st.runs) == sorted(st.runs)
            assert st.detail == "gave up after 4 restarts in a row: it exited with code 1 (failed)"
            runs = [sup.get(i) for i in st.runs]
            gaps = [b.started_at - a.ended_at for a, b in itertools.pairwise(runs)]
            assert all(later > earlier for earlier, later in itertools.pairwise(gaps))
            events = drain(sub)
            waits = [ev for ev in events if ev.phase is Phase.RESTARTING]
            delays = [ev.next_attempt_at - ev.time for ev in waits]
            assert [round(d, 1) for d in delays] == [0.2, 0.4, 0.8, 1.6]
            assert [ev.restarts for ev in waits] == [1, 2, 3, 4]
            for gap, delay in zip(gaps, delays, strict=True):
                assert gap >= delay - 0.05
            restarted = [ev for ev in events if ev.previous is not None]
            assert [(ev.previous, ev.proc_id) for ev in restarted] == list(
                itertools.pairwise(st.runs)
            )
            # Waiting costs no CPU: the loop is a handful of spawns.
            assert cpu < 0.5 * wall + 0.5, (cpu, wall)
            await asyncio.sleep(0.4)
            assert len(started.state("crash").runs) == 5  # no attempt after giving up
            sub.close()

    run(main())


@pytest.mark.promise("Workspaces: restart")
def test_a_stop_by_a_person_ends_the_loop(run, tmp_path):
    ws = Workspace(
        [
            Command(
                "s", "svc", ("sleep", "60"), name="svc", restart="always", backoff=Backoff(0.1)
            ),
            Command(
                "s",
                "loop",
                tuple(py("import sys; sys.exit(2)")),
                name="loop",
                restart="always",
                backoff=Backoff(initial=1.5, cap=1.5),
            ),
            Command("s", "ok", ("true",), name="ok", restart="on-failure"),
        ]
    )

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            started = await ws.start(sup)
            svc = started.state("svc")
            info = await sup.term(svc.proc_id)
            assert info.reason is ExitReason.TERMINATED
            await until(lambda: started.state("svc").phase is Phase.STOPPED, 10)
            assert "terminated" in started.state("svc").detail

            await until(lambda: started.state("loop").phase is Phase.RESTARTING, 10)
            loop = started.state("loop")
            assert loop.describe(now=loop.next_attempt_at - 1.2) == "restarting in 2 s"
            assert started.cancel_restart("loop")
            assert started.state("loop").phase is Phase.STOPPED
            assert not started.cancel_restart("loop")
            with pytest.raises(WorkspaceNotFound):
                started.cancel_restart("nope")

            await until(lambda: started.state("ok").phase is Phase.COMPLETED, 10)
            await asyncio.sleep(1.8)  # past the cancelled attempt and svc's backoff
            assert len(started.state("svc").runs) == 1
            assert len(started.state("loop").runs) == 1
            assert len(started.state("ok").runs) == 1  # on-failure: exit 0 ends it

    run(main())


# -- liveness ---------------------------------------------------------------------------


@pytest.mark.promise("Workspaces: liveness")
def test_a_port_that_stops_answering_gets_its_command_restarted(run, tmp_path):
    port = free_port()
    hangs = py(
        f"""
        import socket, time
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", {port}))
        s.listen(64)
        print("listening", flush=True)
        time.sleep(0.5)
        s.close()  # the port is gone, the process hangs on
        print("hung", flush=True)
        time.sleep(60)
        """
    )
    api = Command(
        "s",
        "a",
        tuple(hangs),
        name="api",
        ready=Ready(port=port, interval=0.05),
        liveness=Liveness(Ready(port=port), period=0.1, timeout=0.5, failures=2),
        restart="on-failure",
        backoff=Backoff(0.1),
        max_restarts=1,
    )

    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=1) as sup:
            started = await Workspace([api]).start(sup)
            await until(lambda: started.state("api").phase is Phase.FAILED, 30, "gave up")
            st = started.state("api")
            assert len(st.runs) == 2 and st.restarts == 1
            for proc_id in st.runs:
                p = sup.get(proc_id)
                assert p.exit.reason is ExitReason.TERMINATED  # by the liveness check
                assert [line.text for line in sup.read(proc_id)] == ["listening", "hung"]
            assert st.detail == (
                f"gave up after 1 restart in a row: liveness (port 127.0.0.1:{port})"
                " failed 2 times in a row"
            )

    run(main())


@pytest.mark.promise("Workspaces: liveness")
def test_a_heartbeat_that_stops_fails_the_command(run, tmp_path):
    beats = py(
        """
        import time
        for _ in range(4):
            print("tick", flush=True)
            time.sleep(0.1)
        time.sleep(60)
        """
    )
    heart = Command(
        "s",
        "a",
        tuple(beats),
        name="heart",
        liveness=Liveness(Ready(line="^tick$"), period=0.6, failures=1),
    )

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            started = await Workspace([heart]).start(sup)
            await until(lambda: started.state("heart").phase is Phase.FAILED, 20)
            st = started.state("heart")
            assert st.detail == "liveness (line /^tick$/) failed once"
            p = sup.get(st.proc_id)
            assert p.exit.reason is ExitReason.TERMINATED
            assert p.runtime(time.monotonic()) >= 0.4  # it ticked for a while, healthy

    run(main())


def test_beats_faster_than_the_period_do_not_hide_a_hang(run, tmp_path):
    """Beats every 0.05 s for 2 s, then none: each period needs one beat since the
    last look, so the hang is found within a few periods of the last beat, not
    after every beat has been consumed one period at a time (40 periods)."""
    beats = py(
        """
        import time
        for _ in range(40):
            print("beat", flush=True)
            time.sleep(0.05)
        print("last", flush=True)
        time.sleep(60)
        """
    )
    period = 0.4
    heart = Command(
        "s",
        "a",
        tuple(beats),
        name="heart",
        liveness=Liveness(Ready(line="^beat$"), period=period, failures=2),
    )

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            started = await Workspace([heart]).start(sup)
            await until(lambda: started.state("heart").proc_id is not None, 10)
            proc_id = started.state("heart").proc_id
            await sup.wait_for(proc_id, "^last$", timeout=30)
            last_beat = time.monotonic()
            await until(lambda: started.state("heart").phase is Phase.FAILED, 30)
            found_after = time.monotonic() - last_beat
            # Consumed one beat a period, 40 beats would last 16 s.
            assert found_after < scaled(6 * period + 2), found_after

    run(main())


# -- shutdown ----------------------------------------------------------------------------


@pytest.mark.promise("Workspaces: Shutdown")
@pytest.mark.promise("Guarantees and limits: Shutdown is bounded")
def test_stop_goes_dependents_first_and_is_bounded(run, tmp_path):
    log = tmp_path / "terms.log"
    ws = Workspace(
        [
            Command("s", "db", on_term_log("db", log), name="db", ready="up"),
            Command(
                "s",
                "api",
                on_term_log("api", log),
                name="api",
                depends_on={"db": "ready"},
                ready="up",
            ),
            Command(
                "s",
                "web",
                on_term_log("web", log),
                name="web",
                depends_on={"api": "ready"},
                ready="up",
            ),
            Command("s", "side", on_term_log("side", log), name="side", ready="up"),
            Command(
                "s",
                "stubborn",
                tuple(ignores_term()),
                name="stubborn",
                depends_on={"db": "started"},
                graceful_timeout=0.3,
            ),
        ]
    )

    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=2) as sup:
            started = await ws.start(sup)
            await until(lambda: started.state("web").phase is Phase.READY, 30, "web ready")
            stubborn = started.state("stubborn")
            await sup.wait_for(stubborn.proc_id, IGNORES_TERM_READY, timeout=10)
            procs = {st.name: sup.get(st.proc_id) for st in started.states()}
            t0 = time.monotonic()
            order = await started.stop()
            took = time.monotonic() - t0
            assert order.index("web") < order.index("api") < order.index("db")
            assert order.index("stubborn") < order.index("db")
            termed = {}
            for line in log.read_text().splitlines():
                name, at = line.split()
                termed[name] = float(at)
            assert set(termed) == {"db", "api", "web", "side"}
            # Each got SIGTERM only after what depends on it had exited.
            assert termed["api"] >= procs["web"].ended_at
            assert termed["db"] >= procs["api"].ended_at
            assert termed["db"] >= procs["stubborn"].ended_at
            assert procs["stubborn"].exit.reason is ExitReason.ESCALATED
            # Independent of the chain: stopped with its first link.
            assert termed["side"] < termed["api"]
            # db waits for the longer of api's chain (3 × 0.2 s) and stubborn's grace.
            assert took < 3 * (0.2 + STOP_SLACK) + scaled(2.0), took
            assert all(st.phase is Phase.STOPPED for st in started.states())
            assert sup.workspaces == []
            assert not started.running
            assert await started.stop() == order  # a second stop is harmless

    run(main())


def test_closing_the_supervisor_stops_the_workspace_in_order(run, tmp_path):
    log = tmp_path / "terms.log"
    ws = Workspace(
        [
            Command("s", "db", on_term_log("db", log, linger=0.3), name="db", ready="up"),
            Command(
                "s",
                "api",
                on_term_log("api", log, linger=0.3),
                name="api",
                depends_on={"db": "ready"},
                ready="up",
            ),
        ]
    )

    async def main():
        sup = Supervisor(log_dir=tmp_path, graceful_timeout=2)
        async with sup:
            started = await ws.start(sup)
            await until(lambda: started.state("api").phase is Phase.READY, 30)
            api = sup.get(started.state("api").proc_id)
        assert [line.split()[0] for line in log.read_text().splitlines()] == ["api", "db"]
        db_termed = float(log.read_text().splitlines()[1].split()[1])
        assert db_termed >= api.ended_at
        assert started.state("db").phase is Phase.STOPPED
        assert not started.running

    run(main())


# -- refused before anything starts -----------------------------------------------------


def test_cycles_and_unknown_names_are_refused_before_anything_starts():
    def cmd(name, deps=(), **kw):
        return Command("s", "a", ("true",), name=name, depends_on=deps, **kw)

    with pytest.raises(InvalidWorkspace) as info:
        Workspace([cmd("a", ["c"]), cmd("b", ["a"]), cmd("c", {"b": "started"}), cmd("d")])
    assert info.value.cycle == ("a", "c", "b", "a")
    assert str(info.value) == "a dependency cycle: a -> c -> b -> a"
    assert (info.value.index, info.value.dependency) == (0, "c")

    with pytest.raises(InvalidWorkspace, match="depends on itself"):
        Workspace([cmd("a", ["a"])])
    with pytest.raises(InvalidWorkspace, match=r"'dbx'.*no command.*did you mean 'db'"):
        Workspace([cmd("db"), cmd("api", {"dbx": "ready"})])
    with pytest.raises(InvalidWorkspace, match=r"has no\s+ready check"):
        Workspace([cmd("db"), cmd("api", {"db": "ready"})])
    with pytest.raises(InvalidWorkspace, match="'service_healthy' is 'ready' here"):
        cmd("api", {"db": "service_healthy"})
    with pytest.raises(InvalidWorkspace, match="two commands are named 'a'"):
        Workspace([cmd("a"), cmd("a")])
    with pytest.raises(InvalidWorkspace, match="write 'always'"):
        cmd("a", restart="unless-stopped")
    with pytest.raises(InvalidWorkspace, match="backoff cap"):
        Backoff(initial=2, cap=1)
    with pytest.raises(InvalidWorkspace, match="liveness failures"):
        Liveness(Ready(port=1), failures=0)
    # A long chain is checked without recursion.
    chain = [cmd(f"c{i}", [f"c{i + 1}"] if i < 4999 else ["c0"]) for i in range(5000)]
    with pytest.raises(InvalidWorkspace, match="a dependency cycle: c0 -> c1 -> c2"):
        Workspace(chain)


@pytest.mark.promise("Workspaces: name")
def test_default_names_and_declared_scopes():
    ws = Workspace(
        [
            Command("s", "dev", ("true",)),
            Command("s", "build", ("true",)),
            Command("s", "build", ("true",)),
            Command("t", "dev", ("true",)),
            Command("t", "x", ("true",), name="db"),
        ],
        sessions={"empty": []},
    )
    assert [c.name for c in ws.commands] == ["s/dev", "build-1", "build-2", "t/dev", "db"]
    assert ws.sessions == {"empty": [], "s": ["dev", "build"], "t": ["dev", "x"]}
    assert ws.title == "workspace"
    assert Workspace([], path="/x/my-stack.toml").title == "my-stack"


def test_one_workspace_of_a_name_per_supervisor(run, tmp_path):
    ws = Workspace([Command("s", "a", ("sleep", "60"), name="a")], name="dup")

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            first = await ws.start(sup)
            with pytest.raises(WorkspaceConflict, match="'dup' is up already"):
                await ws.start(sup)
            assert len(sup.procs()) == 1
            assert await first.stop() == ["a"]
            again = await ws.start(sup)  # stopped: it may run again
            assert again.state("a").proc_id != first.state("a").proc_id

    run(main())


# -- restarting on request -----------------------------------------------------------


def test_a_restart_on_request_stays_within_the_workspace(run, tmp_path):
    """``Supervisor.restart`` of a workspace command's proc (the window's ⟳, ``ctl
    restart``) restarts the command in its workspace: a new run at once, the policy
    and the crash loop going on from there; also from stopped, and out of a backoff."""
    ws = Workspace(
        [
            Command("s", "svc", ("sleep", "60"), name="svc", restart="on-failure"),
            Command(
                "s",
                "crash",
                tuple(py("import sys; sys.exit(3)")),
                name="crash",
                restart="always",
                backoff=Backoff(initial=60, cap=60),
            ),
            Command("s", "web", ("sleep", "60"), name="web", depends_on=["svc"]),
        ]
    )

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            started = await ws.start(sup)
            await until(lambda: started.state("web").proc_id is not None, 10)  # svc started
            sub = sup.subscribe("session.*.agent.*.proc.phase")
            first = started.state("svc").proc_id
            web = started.state("web").proc_id

            # Running: terminated, and the next run starts at once, in the workspace.
            second = await sup.restart(first)
            assert second.id != first
            assert sup.get(first).exit.reason is ExitReason.TERMINATED
            state = started.state("svc")
            assert state.runs == (first, second.id) and state.proc_id == second.id
            assert state.phase is Phase.RUNNING and state.restarts == 1
            assert command_state(sup, first) == state  # the old run still names it
            assert phases(drain(sub), "svc") == [Phase.RESTARTING, Phase.STARTING, Phase.RUNNING]
            assert started.state("web").proc_id == web  # its dependent was left alone
            assert sup.get(web).running

            # Stopped by a person: a restart starts it again.
            await sup.term(second.id)
            await until(lambda: started.state("svc").phase is Phase.STOPPED, 10)
            third = await sup.restart(second.id)
            assert started.state("svc").runs == (first, second.id, third.id)
            assert started.state("svc").phase is Phase.RUNNING

            # Waiting out a 60 s backoff: a restart starts it now.
            await until(lambda: started.state("crash").phase is Phase.RESTARTING, 10)
            waited = started.state("crash")
            began = time.monotonic()
            again = await started.restart("crash")
            assert time.monotonic() - began < scaled(10)
            assert again.id != waited.proc_id
            assert started.state("crash").runs[-1] == again.id
            # Its policy goes on: the new run crashes, and waits out its backoff again.
            await until(
                lambda: (
                    started.state("crash").phase is Phase.RESTARTING
                    and started.state("crash").restarts == waited.restarts + 2
                ),
                10,
            )
            with pytest.raises(WorkspaceNotFound):
                await started.restart("nope")

    run(main())
