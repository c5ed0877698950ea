"""A RemoteSupervisor's mirror of a proc's lines (held as runs, ``_remote_mirror``)
answers ``read_runs`` as the supervisor it mirrors does: a fuzz over cursors,
limits and streams, on a proc whose two streams interleave and whose middle was
cut by the disk cap, mirrored from ``out`` replies in the run form."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

from procwindow import Supervisor
from procwindow.control._handlers_streams import _StreamVerbs
from procwindow.control._protocol import runs_from_json
from procwindow.control._remote_mirror import Mirror
from procwindow.core import Stream

from ..core.helpers import py, until
from ..tiers import examples
from .test_out_cut_points import CHILD, _Collect


def test_a_mirror_reads_as_the_supervisor_it_mirrors(tmp_path: Path) -> None:
    async def main() -> None:
        async with Supervisor(log_dir=tmp_path / "logs", ring_lines=1500, log_cap=64 * 1024) as sup:
            p = await sup.spawn(py(CHILD), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            assert sup.get(p.id).cut_lines > 0
            verbs = _StreamVerbs(sup)
            mirror = Mirror(p.id, 0)
            while not mirror.eof:  # fetched as the remote reader fetches: by cursor
                conn = _Collect()
                await verbs._out_reply(conn, 1, p.id, mirror.end, None, 777, as_runs=True)
                reply = json.loads(conn.data)["result"]
                mirror.take(reply, runs_from_json(reply["lines"]))
            # Held as runs, not a tuple a line. How many lines a run holds depends on
            # how the supervisor's reads of the two pipes fell (8 to 40 here, less
            # under load): a tuple a line would be one each.
            assert len(mirror.runs) < mirror.count // 3
            rnd = random.Random(4)
            for case in range(examples(400)):
                if case == examples(400) // 2:  # the oldest lines let go: the rest reads the same
                    mirror._trim(keep=1000)
                    assert mirror.count == 1000 and mirror.start > 4000
                since = rnd.choice([0, 1, rnd.randrange(6000), 4400, 5999, 6000])
                since = max(since, mirror.start)
                limit = rnd.choice([None, 1, 2, 10, 777, rnd.randrange(1, 6000)])
                stream = rnd.choice([None, Stream.STDOUT, Stream.STDERR])
                want = sup.read_runs(p.id, since, limit=limit, stream=stream)
                got = mirror.read_runs(since, limit, stream, False)
                assert got.lines() == want.lines(), (since, limit, stream)
                assert (got.dropped, got.cursor, got.eof) == (
                    want.dropped,
                    want.cursor,
                    want.eof,
                ), (since, limit, stream)

    asyncio.run(main())
