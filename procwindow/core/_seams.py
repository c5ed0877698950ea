"""Static checks that the supervisor fits the seams the layers below it
define (a protocol is otherwise only checked where a value is passed as one,
and ``Workspace.start`` hands its supervisor on untyped). Imported by nothing:
mypy reads it.
"""

from __future__ import annotations

from ._liveness import Probed
from ._orchestra import RunHost, WorkspaceRun
from ._supervisor import Supervisor
from ._workspace import Host

__all__: list[str] = []


def _supervisor_fits(sup: Supervisor) -> tuple[RunHost, Probed, Host[WorkspaceRun]]:
    return sup, sup, sup
