"""``out`` writes its lines with :func:`lines_json`, straight to text; it must
say exactly what :func:`line_to_json` says of each line, for any text."""

from __future__ import annotations

import json
import random

from procwindow.control._protocol import line_to_json, lines_json
from procwindow.core import Line, Stream

TEXTS = [
    "",
    "plain",
    'q"uote',
    "back\\slash",
    "tab\tnew\nline",
    "\x00\x1b[31mred",
    "é 漢字 🎉",
    "\u2028",
]


def test_lines_json_says_what_line_to_json_says() -> None:
    rnd = random.Random(7)
    lines = [
        Line(
            seq,
            rnd.choice(list(Stream)),
            rnd.choice([0.0, 1e-7, 1733300000.123456, rnd.random() * 1e9]),
            rnd.choice(TEXTS)
            + "".join(chr(rnd.randrange(1, 0x3000)) for _ in range(rnd.randrange(5))),
            rnd.random() < 0.2,
            rnd.random() < 0.1,
        )
        for seq in range(1, 400)
    ]
    cuts = {seq: rnd.randrange(1, 10**12) for seq in rnd.sample(range(1, 400), 40)}
    got = json.loads(b"[" + lines_json(lines, cuts) + b"]")
    assert got == [line_to_json(line, cuts.get(line.seq, 0)) for line in lines]
    assert lines_json([]) == b""
