"""A ProcWindow's models and view-model without the window, as open_proc_window
makes them: tests of the pane's parts build on :class:`Pane`."""

from __future__ import annotations

from procwindow.core import SupervisorAPI
from procwindow.qt import OutputModel, OutputRole, ProcController, ProcModel, StatsSampler
from procwindow.qt.viewmodel import ProcWindowModel


class Pane:
    """A ProcWindow's models and view-model on ``session``/``agent`` of ``sup``."""

    def __init__(self, sup: SupervisorAPI, session: str, agent: str = "a") -> None:
        self.procs = ProcModel(sup, session, agent)
        self.output = OutputModel(sup)
        self.stats = StatsSampler(sup)
        self.controller = ProcController(sup)
        self.model = ProcWindowModel(self.procs, self.output, self.stats, self.controller)
        self.model.settleSelection()

    def texts(self) -> list[str]:
        """The output pane's lines, as text."""
        out = self.output
        return [out.data(out.index(r), OutputRole.TEXT) for r in range(out.rowCount())]

    def close(self) -> None:
        self.model.close()
        self.procs.close()
        self.output.close()
        self.stats.procId = -1
