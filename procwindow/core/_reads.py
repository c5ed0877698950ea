"""Reads: a proc's lines (as lines, runs or bytes), its log files, the live
view, the history's rows and the search; for live procs from their rings and
logs, for past ones (earlier runs, other supervisors, dismissed) from the
history database and the logs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from . import spec
from ._errors import ProcNotFound
from ._proc import Proc
from ._search import Matcher, SearchHit, search_procs
from ._types import ExitReason, ReadBatch, RunBatch, Stream
from .spec import MAX_ID

if TYPE_CHECKING:
    from ._archive import Archive
    from ._child import Child
    from ._replay import ByteBatch

__all__ = ["Reads", "past_id"]


class Reads:
    """The read paths of a supervisor: over its live children (``children``,
    which the supervisor keeps) and its ``archive``. ``Supervisor.read`` and
    the others say what each returns."""

    def __init__(self, children: dict[int, Child], archive: Archive) -> None:
        self._children = children
        self._archive = archive

    def child(self, proc_id: int) -> Child:
        """The live child with this id; ProcNotFound if there is none."""
        try:
            return self._children[proc_id]
        except (KeyError, TypeError):
            raise ProcNotFound(proc_id) from None

    def live(self, proc_id: int) -> Child | None:
        """The live child with this id, or None (a past id, or not an id at all)."""
        return self._children.get(proc_id) if isinstance(proc_id, int) else None

    def get(self, proc_id: int) -> Proc:
        child = self.live(proc_id)
        if child is not None:
            return child.proc
        return self._archive.past(past_id(proc_id))

    def procs(self, session: str | None, agent: str | None) -> list[Proc]:
        return [
            c.proc
            for c in reversed(self._children.values())
            if (session is None or c.proc.session == session)
            and (agent is None or c.proc.agent == agent)
        ]

    def history(
        self,
        session: str | None,
        agent: str | None,
        tool: str | None,
        reason: ExitReason | str | None,
        since: float | None,
        limit: int | None,
        command: str | None,
    ) -> list[Proc]:
        spec.check(
            "history",
            session=session,
            agent=agent,
            tool=tool,
            reason=reason,
            since=since,
            limit=limit,
            command=command,
        )
        rows = self._archive.rows(
            session=session,
            agent=agent,
            tool=tool,
            reason=ExitReason(reason).value if reason is not None else None,
            since=since,
            limit=limit,
            command=command,
        )
        out = []
        for row in rows:
            child = self._children.get(row.id)
            out.append(child.proc if child is not None else Proc._from_record(row))
        return out

    def read(
        self,
        proc_id: int,
        since: int,
        limit: int | None,
        stream: Stream | str | None,
        partial: bool,
    ) -> ReadBatch:
        want = _read_args(proc_id, since, limit, stream, partial)
        child = self.live(proc_id)
        if child is None:
            return self._archive.read_past(past_id(proc_id), since, limit, want)
        batch = self._archive.read_child(child, since, limit, want)
        return child.with_partials(batch, limit, want) if partial else batch

    def read_runs(
        self,
        proc_id: int,
        since: int,
        limit: int | None,
        stream: Stream | str | None,
        partial: bool,
    ) -> RunBatch:
        want = _read_args(proc_id, since, limit, stream, partial)
        child = self.live(proc_id)
        if child is None:
            return RunBatch.of(self._archive.read_past(past_id(proc_id), since, limit, want))
        batch = self._archive.read_child_runs(child, since, limit, want)
        return child.runs_with_partials(batch, limit, want) if partial else batch

    def read_bytes(
        self,
        proc_id: int,
        since: int,
        limit: int | None,
        max_bytes: int | None,
        stream: Stream | str | None,
    ) -> ByteBatch:
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
        ):
            raise ValueError(f"max_bytes must be a positive int (or None), got {max_bytes!r}")
        want = Stream(stream) if stream is not None else None
        child = self.live(proc_id)
        if child is None:
            return self._archive.read_past_bytes(past_id(proc_id), since, limit, max_bytes, want)
        return self._archive.read_child_bytes(child, since, limit, max_bytes, want)

    def log_path(self, proc_id: int, stream: Stream | str) -> str:
        if isinstance(proc_id, int) and proc_id in self._children:
            return self._archive.logs.file_path(proc_id, stream)
        return self._archive.log_path(past_id(proc_id), Stream(stream))

    def search(
        self,
        pattern: str,
        regex: bool,
        case_sensitive: bool,
        session: str | None,
        agent: str | None,
        proc: int | None,
        since: float | None,
        limit: int | None,
    ) -> AsyncIterator[SearchHit]:
        spec.check(
            "search",
            pattern=pattern,
            regex=regex,
            case_sensitive=case_sensitive,
            session=session,
            agent=agent,
            proc=proc,
            since=since,
            limit=limit,
        )
        match = Matcher(pattern, regex=regex, case_sensitive=case_sensitive)
        return search_procs(
            self._children,
            self._archive,
            match,
            session=session,
            agent=agent,
            proc=proc,
            since=since,
            limit=limit,
        )


def past_id(proc_id: object) -> int:
    """``proc_id`` if it can be the id of a past proc, else ProcNotFound."""
    # Past SQLite's 64-bit integers there is no proc either (not an overflow).
    if isinstance(proc_id, bool) or not isinstance(proc_id, int) or not 1 <= proc_id <= MAX_ID:
        raise ProcNotFound(proc_id)  # type: ignore[arg-type]
    return proc_id


def _read_args(
    proc_id: int, since: int, limit: int | None, stream: Stream | str | None, partial: bool
) -> Stream | None:
    """Check a read's arguments as ``out`` takes them; the stream wanted."""
    spec.check("out", proc=proc_id, since=since, limit=limit, stream=stream, partial=partial)
    return Stream(stream) if stream is not None else None
