"""What the cells of the process table say: the value of every role of a row.

:class:`ProcCells` answers ``ProcModel.data()``. Its values come from the row
(:class:`~._proc_rows.ProcRow`: the state announced, its words and colour,
made when the state changed), from the row's sampler (CPU, memory, their
sparklines) and, for what changes with time, from memos that hold for one
*era*: the model starts a new one at every tick of its
:class:`~procwindow.qt._ticker.Ticker` and with every batch of supervisor
events (:meth:`ProcCells.advance`). So ``data()`` never reads the clock or
walks the supervisor's workspaces: a row's runtime, and its workspace's phase
text and tooltip, are computed at most once per era, when first read, from the
era's ``now``. A view reads a row's cells again only when the model announces
them, which it does after each of those same ticks and events.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from procwindow.core import ProcNotFound, ProcState, SupervisorAPI, command_state, format_runtime

from ..sampler import RowSampler, StatsHistory, cpu_text, memory_text
from ._proc_rows import ProcRow
from .columns import ProcColumn
from .format import DISCONNECTED, STATUS_COLORS, depends_text, time_text
from .roles import ProcRole

__all__ = ["ProcCells", "status_tint"]

#: The phase text that the Status cell shows instead of how the last run ended.
_RESTARTING = "restarting"


def status_tint(base: QColor) -> QColor:
    """A status colour (ProcModel's ``statusColor``) lifted for text on the dark theme.

    The hue stays, saturation drops by 15 %, lightness rises to at least 62 %.
    """
    return QColor.fromHslF(
        max(0.0, base.hslHueF()),
        min(1.0, base.hslSaturationF() * 0.85),
        max(base.lightnessF(), 0.62),
        1.0,
    )


def _exit_info(row: ProcRow) -> str:
    """``exit code 143 · reason terminated`` once exited, else ""."""
    if row.exit is None:
        return ""
    return f"exit code {row.exit.code} · reason {row.exit.reason.value}"


class ProcCells:
    """The roles of a table's rows (see the module's docstring).

    ``columns`` are the table's columns (the model sets them with its scope).
    It is also the :class:`~._proc_rows.RowValues` a sort by runtime, CPU or
    memory reads.
    """

    def __init__(self, supervisor: SupervisorAPI, sampler: RowSampler) -> None:
        self._sup = supervisor
        self._sampler = sampler
        self.columns: tuple[ProcColumn, ...] = ()
        self.era = 0
        self.now = time.time()
        self._tints: dict[str, QColor] = {}

    def advance(self, now: float | None = None) -> None:
        """A new era: what changes with time is computed again when next read."""
        self.era += 1
        self.now = time.time() if now is None else now

    # -- values that change while a proc runs (RowValues) -------------------------

    def runtime(self, row: ProcRow) -> float:
        """Seconds the row's proc has run (until its exit), as of this era."""
        if row.era != self.era:
            row.era = self.era
            row.runtime = self._runtime_now(row)
        return row.runtime

    def _runtime_now(self, row: ProcRow) -> float:
        if row.exit is not None:
            return row.exit.runtime
        try:
            return self._sup.runtime(row.proc.id)
        except ProcNotFound:  # dismissed; its event is on the way
            return 0.0

    def phase(self, row: ProcRow) -> tuple[str, str]:
        """What the workspace that started the row's proc does with it ("restarting
        in 4 s", "ready"), and the tooltip that adds what it depends on; "" for
        both when no running workspace started it or a later run replaced it.
        As of this era."""
        if row.phase_era != self.era:
            row.phase_era = self.era
            row.phase_text = row.phase_word = row.workspace_tip = ""
            state = command_state(self._sup, row.proc.id)
            if state is not None and state.proc_id == row.proc.id:
                row.phase_word = state.phase.value
                row.phase_text = state.describe(self.now)
                row.workspace_tip = f"{row.phase_text}\n{depends_text(state)}"
        return row.phase_text, row.workspace_tip

    def cpu(self, row: ProcRow) -> float:
        h = self._live_history(row)
        return h.cpu_now if h is not None else -1.0

    def memory(self, row: ProcRow) -> int:
        h = self._live_history(row)
        return h.rss_now if h is not None else -1

    def _live_history(self, row: ProcRow) -> StatsHistory | None:
        """The samples of a running row (None once it exited, or while its
        supervisor is out of reach: it reads "–", not a stale value)."""
        if row.exit is not None or row.proc.disconnected:
            return None
        return self._sampler.history(row.proc.id)

    # -- the words and colours of the status ---------------------------------------

    def tint(self, color: str) -> QColor:
        """``color`` lifted for text on the dark theme (:func:`status_tint`), made once."""
        tint = self._tints.get(color)
        if tint is None:
            tint = self._tints[color] = status_tint(QColor(color))
        return tint

    def status_label(self, row: ProcRow, status: str) -> str:
        """The Status cell's text: a restart on its way says when (its phase
        text), instead of how the last run ended (``status``)."""
        phase = self.phase(row)[0]
        return phase if phase.startswith(_RESTARTING) else status

    def status_tip(self, row: ProcRow) -> str:
        """The Status cell's tooltip: how it exited, and what its workspace does
        with it and what it depends on ("" for neither)."""
        return "\n".join(t for t in (_exit_info(row), self.phase(row)[1]) if t)

    # -- data() ------------------------------------------------------------------------

    def value(self, row: ProcRow, column: int, role: int) -> object:
        """The value of ``role`` at ``column`` of ``row`` (None: a role it does not serve)."""
        p = row.proc
        if p.disconnected:  # its supervisor's link is down
            value = self._disconnected(row, role)
            if value is not None:
                return value
        match role:
            case Qt.ItemDataRole.DisplayRole:
                return self.display(row, column)
            case Qt.ItemDataRole.ToolTipRole | ProcRole.COMMAND:
                return row.cmd
            case ProcRole.PROC_ID:
                return p.id
            case ProcRole.OS_PID:
                return p.os_pid
            case ProcRole.TOOL:
                return p.tool
            case ProcRole.STATUS:
                return row.state.value
            case ProcRole.STATUS_TEXT:
                return row.status_text
            case ProcRole.STATUS_LABEL:
                return self.status_label(row, row.status_text)
            case ProcRole.STATUS_TIP:
                return self.status_tip(row)
            case ProcRole.PHASE_TEXT:
                return self.phase(row)[0]
            case ProcRole.WORKSPACE_TIP:
                return self.phase(row)[1]
            case ProcRole.STATUS_COLOR:
                return row.status_color
            case ProcRole.STATUS_TINT:
                return self.tint(row.status_color)
            case ProcRole.EXIT_CODE:
                return row.exit.code if row.exit is not None else -1
            case ProcRole.EXIT_REASON:
                return row.exit.reason.value if row.exit is not None else ""
            case ProcRole.START_TIME:
                return p.started_at
            case ProcRole.START_TEXT:
                return time_text(p.started_at)
            case ProcRole.RUNTIME:
                return self.runtime(row)
            case ProcRole.RUNTIME_TEXT:
                return format_runtime(self.runtime(row))
            case _:
                return self._action_or_stats(row, column, role)

    def _disconnected(self, row: ProcRow, role: int) -> object:
        """What a row reads while its supervisor is out of reach (None: as usual)."""
        match role:
            case ProcRole.STATUS_TEXT:
                return DISCONNECTED
            case ProcRole.STATUS_LABEL:
                return self.status_label(row, DISCONNECTED)
            case ProcRole.STATUS_COLOR:
                return STATUS_COLORS[DISCONNECTED]
            case ProcRole.STATUS_TINT:
                return self.tint(STATUS_COLORS[DISCONNECTED])
            case ProcRole.CAN_TERM | ProcRole.CAN_KILL | ProcRole.CAN_DISMISS:
                return False
            case ProcRole.CAN_RESTART:
                return False
        return None

    def _action_or_stats(self, row: ProcRow, column: int, role: int) -> object:
        p = row.proc
        match role:
            case ProcRole.CAN_TERM:
                return row.exit is None and row.state is not ProcState.STOPPING
            case ProcRole.CAN_KILL:
                return row.exit is None
            case ProcRole.CAN_DISMISS:
                return row.exit is not None
            case ProcRole.CAN_RESTART:
                return row.state is not ProcState.STOPPING
            case ProcRole.SESSION:
                return p.session
            case ProcRole.AGENT:
                return p.agent
            case ProcRole.COLUMN_NAME:
                return self.columns[column].value if 0 <= column < len(self.columns) else ""
            case ProcRole.CPU_PERCENT:
                return self.cpu(row)
            case ProcRole.CPU_TEXT:
                return cpu_text(self.cpu(row))
            case ProcRole.MEMORY:
                return self.memory(row)
            case ProcRole.MEMORY_TEXT:
                return memory_text(self.memory(row))
            case ProcRole.CPU_HISTORY:
                h = self._sampler.history(p.id)
                return h.cpu_points() if h is not None else []
            case ProcRole.MEMORY_HISTORY:
                h = self._sampler.history(p.id)
                return h.rss_points() if h is not None else []
            case ProcRole.STATS_LIVE:
                return self._live_history(row) is not None
            case ProcRole.SAMPLES:
                h = self._sampler.history(p.id)
                return h.count if h is not None else 0
        return self._fold_value(row, role)

    def _fold_value(self, row: ProcRow, role: int) -> object:
        """The roles of a workspace command's row: its name, its runs."""
        fold = row.fold
        earlier = fold.earlier if fold is not None and not row.depth else ()
        match role:
            case ProcRole.COMMAND_NAME:
                return fold.key[1] if fold is not None else ""
            case ProcRole.RESTART_COUNT:
                return len(earlier)
            case ProcRole.RUNS_SHOWN:
                return bool(earlier) and fold is not None and fold.expanded
            case ProcRole.EARLIER_RUN:
                return row.depth > 0
            case ProcRole.RUN_TEXT:
                return self.run_text(row)
        return None

    def run_text(self, row: ProcRow) -> str:
        """What a command's row says after its name: the phase of the command
        (``ready``, ``restarting``…) for its newest run, ``run 2`` for an earlier one."""
        fold = row.fold
        if fold is None:
            return ""
        if not row.depth:
            self.phase(row)
            return row.phase_word
        runs = fold.earlier
        return f"run {len(runs) - runs.index(row)}" if row in runs else ""

    def display(self, row: ProcRow, column: int) -> str:
        """The text of the cell at ``column`` (empty for ``actions``)."""
        if not 0 <= column < len(self.columns):
            return ""
        match self.columns[column]:
            case ProcColumn.ID:
                return str(row.proc.id)
            case ProcColumn.PID:
                return str(row.proc.os_pid) if row.proc.os_pid else "–"
            case ProcColumn.AGENT:
                return row.proc.agent
            case ProcColumn.TOOL:
                return row.label
            case ProcColumn.STATUS:
                return row.status_text
            case ProcColumn.RUNTIME:
                return format_runtime(self.runtime(row))
            case ProcColumn.CPU:
                return cpu_text(self.cpu(row))
            case ProcColumn.MEMORY:
                return memory_text(self.memory(row))
            case _:
                return ""
