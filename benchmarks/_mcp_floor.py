"""The floor of an MCP tool call, for ``bench_agents.py mcp``: a server on the same
SDK and the same stdio transport as ``procwindow mcp``, with one tool, ``read``,
that takes the same arguments and returns a constant result of the same shape and
size as procwindow's ``read`` of 200 lines (the same output schema, checked by the
client the same way), without asking any server for it.

    python benchmarks/_mcp_floor.py    # speaks MCP on stdin and stdout
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from procwindow.mcp._results import RESULTS
from procwindow.mcp._stdio import pipe_streams

Page = RESULTS["read"]
#: What procwindow's read gives for lines 4801 to 5000 of ``seq 1 5000``.
RESULT = {
    "id": 1,
    "text": "\n".join(str(n) for n in range(4801, 5001)),
    "lines": 200,
    "cursor": 5000,
    "more": False,
    "eof": True,
    "state": "exited",
    "exit": {"code": 0, "signal": None, "reason": "exited", "runtime": 0.01},
}


async def serve() -> None:
    app = MCPServer("floor", log_level="WARNING")

    async def read(id: int, since: int = 0, limit: int = 200) -> Page:  # type: ignore[valid-type]
        """Lines after a cursor (a constant here)."""
        return RESULT

    app.add_tool(read, name="read")
    server = app._lowlevel_server
    async with pipe_streams() as streams:
        assert streams is not None, "stdin and stdout must be pipes"
        async with stdio_server(*streams) as (rd, wr):  # type: ignore[arg-type]
            await server.run(rd, wr, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(serve())
