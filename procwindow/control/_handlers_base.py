"""What the request handlers of every verb family share: the ``Handler`` type,
``_Replied``, and a proc's runtime as a reply gives it. A request's fields are
checked before any handler sees them (``procwindow.core.spec``).

The handlers are cut by verb family, each a class of its own holding the
supervisor (``_handlers_streams``, ``_handlers_agent``, ``_handlers_workspaces``,
and the proc verbs in ``_handlers``): each gives a table of its verbs, and
:class:`~procwindow.control._handlers.Handlers` dispatches a request by the
tables put together.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..core import Proc, Supervisor
from ._conn import Conn

#: A verb's handler: the request's checked fields and the connection; its result.
Handler = Callable[[dict[str, Any], Conn], Awaitable[Any]]


class _Replied(Exception):
    """A handler already wrote its answer."""


def runtime(sup: Supervisor, p: Proc) -> float:
    """Seconds ``p`` ran. A proc of the history knows its own (from wall-clock
    times); asking the supervisor would look it up in the database again."""
    return sup.runtime(p.id) if p.live else p.runtime(time.monotonic())
