"""What each MCP tool returns, as the output schemas the client is shown.

Each result is a ``TypedDict``: the SDK makes a tool's output schema from it and
checks the result against it. Keys a result may lack are ``NotRequired``; a result
may carry more than its schema names (``extra="allow"``), so that nothing a tool
returns is dropped on the way.
"""

from __future__ import annotations

from typing import Any, NotRequired, get_type_hints

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

from ..core import ListeningPort, TreeProcess

__all__ = ["RESULTS"]

_OPEN = ConfigDict(extra="allow")


@with_config(_OPEN)
class Exit(TypedDict):
    """How a process ended."""

    code: int
    signal: int | None
    reason: str
    runtime: float


@with_config(_OPEN)
class Line(TypedDict):
    """One output line: its seq (the cursor after it), stream, time and text."""

    seq: int
    stream: str
    time: float
    text: str


@with_config(_OPEN)
class Row(TypedDict):
    """A process, as ``list`` and ``history`` show it."""

    id: int
    os_pid: int | None
    state: str
    code: NotRequired[int | None]
    reason: NotRequired[str | None]
    runtime: float | None
    cmd: str
    session: NotRequired[str]
    agent: NotRequired[str]
    started_at: NotRequired[float | None]
    command_run: NotRequired[CommandRun]


@with_config(_OPEN)
class CommandRun(TypedDict):
    """The workspace command a process is a run of; ``restart_of``: the process
    of that command's run before it (null for its first run)."""

    workspace: str
    command: str
    restart_of: int | None


@with_config(_OPEN)
class Ended(TypedDict):
    """A process that ended: how, and the head and tail of its output."""

    id: int
    state: str
    exit: Exit | None
    excerpt: str
    cursor: int
    omitted_lines: int


@with_config(_OPEN)
class Started(TypedDict):
    """``run``: the new process; with ``wait``, how it ended or that it runs on."""

    id: int
    os_pid: int
    session: str
    agent: str
    reused: NotRequired[bool]
    running: NotRequired[bool]
    state: NotRequired[str]
    exit: NotRequired[Exit | None]
    excerpt: NotRequired[str]
    cursor: NotRequired[int]
    omitted_lines: NotRequired[int]


@with_config(_OPEN)
class Page(TypedDict):
    """``read``: lines as text after a cursor, and the process's state."""

    id: int
    text: str
    lines: int
    cursor: int
    more: bool
    eof: bool
    state: str
    exit: Exit | None
    note: NotRequired[str]
    dropped: NotRequired[int]
    cut_bytes: NotRequired[int]
    screen: NotRequired[str]


@with_config(_OPEN)
class Excerpt(TypedDict):
    """``excerpt``: head and tail as text, with what was left out counted."""

    text: str
    cursor: int
    lines: int
    omitted_lines: int
    omitted_bytes: int
    eof: bool
    exit: Exit | None
    text_cut_bytes: NotRequired[int]
    screen: NotRequired[str]
    note: NotRequired[str]


@with_config(_OPEN)
class Hit(TypedDict):
    """A matching line; ``context``: the lines around it, the hit marked ``>``."""

    id: int
    seq: int
    stream: str
    text: str
    context: NotRequired[str]
    session: NotRequired[str]
    agent: NotRequired[str]


@with_config(_OPEN)
class Hits(TypedDict):
    hits: list[Hit]
    limited: bool


@with_config(_OPEN)
class Matched(TypedDict):
    line: Line
    cursor: int


@with_config(_OPEN)
class Ready(TypedDict):
    ready: bool
    proc: Row


@with_config(_OPEN)
class Written(TypedDict):
    written: int
    closed: NotRequired[bool]


@with_config(_OPEN)
class Interrupted(TypedDict):
    id: int
    delivered: bool


@with_config(_OPEN)
class Stopped(TypedDict):
    id: int
    exit: Exit


@with_config(_OPEN)
class Restarted(TypedDict):
    previous: int
    id: int
    os_pid: int


@with_config(_OPEN)
class Dismissed(TypedDict):
    id: int
    dismissed: bool


@with_config(_OPEN)
class Rows(TypedDict):
    """Processes, newest first; ``count`` of all, ``note`` when some were left out."""

    procs: list[Row]
    count: int
    note: NotRequired[str]
    session: NotRequired[str]
    agent: NotRequired[str]


def _of(cls: type) -> Any:
    """A result's part that is a dataclass of the library's, key for field."""
    return with_config(_OPEN)(TypedDict(cls.__name__, get_type_hints(cls)))  # type: ignore[operator]


#: A port a process listens on (``ListeningPort``).
Port = _of(ListeningPort)


@with_config(_OPEN)
class Ports(TypedDict):
    id: int
    ports: list[Port]  # type: ignore[valid-type]  # made at run time, from ListeningPort


#: A process of a proc's tree (``TreeProcess``).
Member = _of(TreeProcess)


@with_config(_OPEN)
class Tree(TypedDict):
    """A process's tree, parents before children; ``note`` when some were left out."""

    id: int
    tree: list[Member]  # type: ignore[valid-type]  # made at run time, from TreeProcess
    note: NotRequired[str]


@with_config(_OPEN)
class Signalled(TypedDict):
    id: int
    signal: int
    sent: bool


@with_config(_OPEN)
class Screen(TypedDict):
    """A terminal's screen: its rows as text, its size, the cursor (row, column)."""

    id: int
    text: str
    rows: int
    cols: int
    cursor: list[int]
    alternate: bool


@with_config(_OPEN)
class Resized(TypedDict):
    id: int
    rows: int
    cols: int


#: Each tool's result.
RESULTS: dict[str, Any] = {
    "run": Started,
    "read": Page,
    "excerpt": Excerpt,
    "search": Hits,
    "wait_for": Matched,
    "wait_ready": Ready,
    "wait": Ended,
    "write": Written,
    "resize": Resized,
    "screen": Screen,
    "interrupt": Interrupted,
    "signal": Signalled,
    "term": Stopped,
    "kill": Stopped,
    "restart": Restarted,
    "dismiss": Dismissed,
    "list": Rows,
    "history": Rows,
    "ports": Ports,
    "tree": Tree,
}
