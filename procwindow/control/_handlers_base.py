"""What the request handlers of every verb family share: ``_Verbs``, their base
(the supervisor, the sessions declared), and ``_Replied``. A request's fields
are checked before any handler sees them (``procwindow.core.spec``).

The handlers are cut by verb family, each a base class of
:class:`~procwindow.control._handlers.Handlers` in a module of its own
(``_handlers_streams``, ``_handlers_agent``, ``_handlers_workspaces``), so that
every handler stays a method that reaches the supervisor as ``self.sup``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from ..core import Proc, Supervisor


class _Replied(Exception):
    """A handler already wrote its answer."""


class _Verbs:
    """The base of every verb family: what a handler may use besides its request."""

    sup: Supervisor
    declared: Mapping[str, Sequence[str]]

    def _runtime(self, p: Proc) -> float:
        """Seconds ``p`` ran. A proc of the history knows its own (from wall-clock
        times); asking the supervisor would look it up in the database again."""
        return self.sup.runtime(p.id) if p.live else p.runtime(time.monotonic())
