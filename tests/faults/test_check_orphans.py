"""Check commands run under the no-orphan guarantee of procs: what a readiness or
liveness command leaves running (``setsid … &``) carries its proc's marker, so it
is stopped with the proc and with the server, never left behind."""

from __future__ import annotations

from pathlib import Path

from ..control.conftest import start_server, stop_server
from ..core.helpers import alive
from ..tiers import scaled


def test_what_a_readiness_command_leaves_running_stops_with_serve(tmp_path: Path) -> None:
    pid_file = tmp_path / "escapee.pid"
    # Told once the escapee runs in a session of its own (before, the check's group
    # kill could still reach it).
    check = (
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & p=$!;"
        ' while [ "$(cut -d" " -f6 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done;'
        f" echo $p > {pid_file}"
    )
    server = start_server(tmp_path)
    try:
        server.ctl(
            "run", "--session", "s", "--agent", "a", "--ready", f"cmd:{check}", "--", "sleep", "60"
        )
        server.ctl("ready", "1", "--timeout", str(scaled(30)))
        escapee = int(pid_file.read_text())
        assert alive(escapee)  # a session of its own, out of the check's group
    finally:
        assert stop_server(server) == 0
    assert not alive(escapee), f"the check's {escapee} outlived the server"
