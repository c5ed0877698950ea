"""An attached window against the in-process one, run by hand. Nothing is asserted;
it prints medians, and ratios against the in-process window measured in the same run.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_attach.py [--lines 200000] [--rounds 5] [--no-ssh]

Three ways to "a supervisor", interleaved round by round:

- ``in-process``: a Supervisor in this process (the window of ``procwindow``);
- ``socket``: a RemoteSupervisor on a ``procwindow serve`` subprocess's Unix socket
  (``procwindow attach NAME``);
- ``ssh``: the same serve through a throwaway ``sshd`` on 127.0.0.1 (host and user
  keys made here), ``ssh … procwindow ctl bridge NAME`` (``procwindow attach
  ssh://…``). Left out without ``/usr/sbin/sshd`` or with ``--no-ssh``.

Measures, each on a qasync loop with a QApplication, as in the window:

``model lines/s``: a child writes ``--lines`` lines of ~80 bytes as fast as it can;
an OutputModel (``maxLines`` = that many, so none is dropped) shows its proc from
the spawn; the time is from the spawn's return to the model holding every line.
The model reads at most 2,000 lines a frame (16 ms), so ~125,000 lines/s is its
own ceiling. ``reader lines/s``: the same child, read by cursor (``read(id,
since)``) in a loop that sleeps 1 ms when nothing is new: what the transport
gives. ``exit -> row``: a child sleeps 0.3 s, prints ``time.time()`` and exits;
a ProcModel shows its scope; the latency is from that stamp to the
``dataChanged`` that turns its row's status to exited (median of 5 per round).
``a second attach``: a RemoteSupervisor connected beside the bench's own, from
``connect`` to its snapshot (over ssh it takes the connections parked on the
host's master, once they are there); in process, opening a Supervisor.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync
from PySide6.QtWidgets import QApplication

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor, SupervisorAPI
from procwindow.qt import OutputModel, ProcModel, ProcRole

ROOT = Path(__file__).resolve().parent.parent
SESSION, AGENT = "bench", "a"
SSHD = "/usr/sbin/sshd"
FLOOD = (
    "import sys\n"
    "n = int(sys.argv[1])\n"
    "w = sys.stdout.write\n"
    "for i in range(0, n, 1000):\n"
    "    w(''.join(f'line {j:08d} ' + 'x' * 66 + '\\n' for j in range(i, min(n, i + 1000))))\n"
)
EXITER = "import os, time\ntime.sleep(0.3)\nprint(repr(time.time()), flush=True)\nos._exit(0)\n"


# -- the server and the ssh daemon ---------------------------------------------------------


@contextlib.contextmanager
def serve(tmp: Path) -> Iterator[tuple[str, Path]]:
    """A ``procwindow serve --name bench`` with its own runtime and state directories."""
    runtime = tmp / "runtime"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), XDG_STATE_HOME=str(tmp / "state"))
    env["PYTHONPATH"] = str(ROOT)
    path = runtime / "procwindow" / "bench.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "serve", "--name", "bench"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not path.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("procwindow serve did not start")
            time.sleep(0.05)
        yield str(path), runtime
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@contextlib.contextmanager
def sshd(tmp: Path) -> Iterator[tuple[str, list[str]] | None]:
    """A throwaway sshd on 127.0.0.1 for this user: (url host part, ssh command)."""
    if not os.path.exists(SSHD) or shutil.which("ssh") is None:
        yield None
        return
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    d = tmp / "ssh"
    d.mkdir(mode=0o700)
    for key in ("host_key", "user_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True
        )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    user = getpass.getuser()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
        f"AuthorizedKeysFile {d / 'user_key.pub'}\nPidFile {d / 'pid'}\nStrictModes no\n"
        f"UsePAM no\nPasswordAuthentication no\nAllowUsers {user}\nUseDNS no\n"
        f"PermitRootLogin {'prohibit-password' if os.geteuid() == 0 else 'no'}\n"
    )
    host = (d / "host_key.pub").read_text().split()[:2]
    (d / "known").write_text(f"[127.0.0.1]:{port} {' '.join(host)}\n")
    (d / "ssh_config").write_text(
        f"Host *\n  IdentityFile {d / 'user_key'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {d / 'known'}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
    )
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("sshd did not start") from None
                time.sleep(0.05)
        yield f"{user}@127.0.0.1:{port}", ["ssh", "-F", str(d / "ssh_config")]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- the measures -----------------------------------------------------------------------------


async def until(cond: Any, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("benchmark step timed out")
        await asyncio.sleep(0.002)


async def model_rate(sup: SupervisorAPI, lines: int) -> float:
    model = OutputModel(cast(Supervisor, sup))
    model.maxLines = lines
    try:
        p = await sup.spawn([sys.executable, "-c", FLOOD, str(lines)], session=SESSION, agent=AGENT)
        start = time.perf_counter()
        model.procId = p.id
        await until(lambda: model.lineCount >= lines)
        elapsed = time.perf_counter() - start
        await until(lambda: sup.get(p.id).exit is not None)
        sup.dismiss(p.id)
        return lines / elapsed
    finally:
        model.close()
        model.deleteLater()


async def reader_rate(sup: SupervisorAPI, lines: int) -> float:
    p = await sup.spawn([sys.executable, "-c", FLOOD, str(lines)], session=SESSION, agent=AGENT)
    start = time.perf_counter()
    cursor = got = 0
    while got < lines:
        batch = sup.read(p.id, cursor)
        got += len(batch.lines)
        cursor = batch.cursor
        if not batch.lines:
            await asyncio.sleep(0.001)
    elapsed = time.perf_counter() - start
    await until(lambda: sup.get(p.id).exit is not None)
    sup.dismiss(p.id)
    return lines / elapsed


async def exit_latency(sup: SupervisorAPI) -> float:
    model = ProcModel(cast(Supervisor, sup), SESSION, AGENT)
    seen: dict[int, float] = {}

    def changed(*_: object) -> None:
        for row in range(model.rowCount()):
            pid = model.procIdAt(row)
            status = model.data(model.index(row, 0), ProcRole.STATUS)
            if status == "exited" and pid not in seen:
                seen[pid] = time.time()

    model.dataChanged.connect(changed)
    model.rowsInserted.connect(changed)  # a row may come in exited (after a resync)
    model.modelReset.connect(changed)
    try:
        p = await sup.spawn([sys.executable, "-c", EXITER], session=SESSION, agent=AGENT)
        try:
            await until(lambda: p.id in seen, timeout=30)
        except TimeoutError:
            rows = [
                (model.procIdAt(r), model.data(model.index(r, 0), ProcRole.STATUS))
                for r in range(model.rowCount())
            ]
            raise TimeoutError(f"{sup!r}: proc {p.id} {sup.get(p.id)!r}; rows {rows}") from None
        await until(lambda: sup.read(p.id).eof or len(sup.read(p.id).lines) > 0)
        batch = sup.read(p.id)
        while not batch.lines:
            await asyncio.sleep(0.01)
            batch = sup.read(p.id)
        stamp = float(batch.lines[0].text)
        sup.dismiss(p.id)
        return (seen[p.id] - stamp) * 1000
    finally:
        model.close()
        model.deleteLater()


@contextlib.asynccontextmanager
async def opened(kind: str, where: dict[str, Any]) -> AsyncIterator[SupervisorAPI]:
    if kind == "in-process":
        async with Supervisor(log_dir=where["logs"]) as sup:
            yield sup
    else:
        if kind == "socket":
            remote = await RemoteSupervisor.connect(where["socket"])
        else:
            remote = await RemoteSupervisor.connect(
                where["ssh_url"],
                ssh_command=where["ssh_command"],
                remote_procwindow=where["remote_procwindow"],
            )
        drops: list[str] = []
        remote.add_listener(
            lambda what: (
                drops.append(what) if what == "disconnected" and not remote.closed else None
            )
        )
        async with remote:
            yield remote
        if drops:
            print(f"{kind}: the link dropped {len(drops)} times: {remote.last_error}")


async def attach_ms(kind: str, where: dict[str, Any], first: SupervisorAPI) -> float:
    """A second attach beside ``first`` (the window attaching another view of the
    same server): from ``connect`` to the snapshot taken, ms. Over ssh it takes the
    connections ``first``'s link parked on the host's master; before timing, wait
    until they are there (a second attach seconds after the first, as a person
    does). In process: opening a Supervisor."""
    if kind == "in-process":
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as logs:
            async with Supervisor(log_dir=logs, history=False):
                return (time.perf_counter() - start) * 1000
    link = cast(RemoteSupervisor, first).link
    master = getattr(link, "_master", None)
    if master is not None:
        command = link.argv()[-1]  # type: ignore[union-attr]
        await until(lambda: master.parked(command) >= 2, timeout=10)
    start = time.perf_counter()
    async with opened(kind, where):
        elapsed = time.perf_counter() - start
    return elapsed * 1000


async def bench(args: argparse.Namespace, where: dict[str, Any], kinds: list[str]) -> None:
    results: dict[str, dict[str, list[float]]] = {k: {} for k in kinds}
    async with contextlib.AsyncExitStack() as stack:
        sups = {k: await stack.enter_async_context(opened(k, where)) for k in kinds}
        for r in range(args.rounds):
            for kind in kinds:
                sup = sups[kind]
                res = results[kind]
                res.setdefault("model", []).append(await model_rate(sup, args.lines))
                res.setdefault("reader", []).append(await reader_rate(sup, args.lines))
                lat = [await exit_latency(sup) for _ in range(5)]
                res.setdefault("exit", []).append(statistics.median(lat))
                res.setdefault("attach", []).append(await attach_ms(kind, where, sup))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    med = {k: {m: statistics.median(v) for m, v in results[k].items()} for k in kinds}
    base = med["in-process"]
    print(f"\n{args.lines:,} lines of ~80 bytes; medians of {args.rounds} rounds\n")
    print("| measure | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for measure, title, unit in (
        ("model", "OutputModel, lines/s", "rate"),
        ("reader", "read by cursor, lines/s", "rate"),
        ("exit", "child exit -> row status, ms", "ms"),
        ("attach", "a second attach (in process: a new Supervisor), ms", "ms"),
    ):
        cells = []
        for kind in kinds:
            value = med[kind][measure]
            if unit == "rate":
                text = f"{value:,.0f}"
                ratio = value / base[measure]
            else:
                text = f"{value:.1f}"
                ratio = base[measure] / value if value else float("nan")
            cells.append(text if kind == "in-process" else f"{text} ({ratio:.2f}x)")
        print(f"| {title} | " + " | ".join(cells) + " |")
    print("\nratios: against in-process (higher is better for both)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-ssh", action="store_true")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(["bench_attach"])
    with tempfile.TemporaryDirectory(prefix="bench-attach-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["XDG_STATE_HOME"] = str(tmp / "own-state")
        with serve(tmp) as (socket_path, runtime), sshd(tmp) as ssh:
            where: dict[str, Any] = {"logs": tmp / "logs", "socket": socket_path}
            kinds = ["in-process", "socket"]
            if ssh is not None and not args.no_ssh:
                host, command = ssh
                where["ssh_url"] = f"ssh://{host}/bench"
                where["ssh_command"] = command
                procwindow = Path(sys.executable).parent / "procwindow"
                where["remote_procwindow"] = f"env XDG_RUNTIME_DIR={runtime} {procwindow}"
                kinds.append("ssh")
            loop = qasync.QEventLoop(app)
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(bench(args, where, kinds))
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()


if __name__ == "__main__":
    main()
