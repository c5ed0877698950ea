"""Write the fields of docs/protocol.md's table of operations from the spec.

Each row of the table under "## Operations" names an operation; its middle cell
(the fields it takes) is what :meth:`procwindow.core.spec.Verb.describe` says, so
the document cannot drift from what the server checks. The results (the last
cell) are written by hand.

    scripts/protocol_docs            rewrite the table's fields
    scripts/protocol_docs --check    exit 1 if the document differs (tests/test_spec.py)
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from procwindow.core.spec import OPS, VERBS  # noqa: E402

DOC = ROOT / "docs" / "protocol.md"
_ROW = re.compile(r"^\| `(?P<op>[a-z_]+)` \| (?P<fields>.*?) \| (?P<result>.*) \|$")


def rewritten(text: str) -> str:
    """``text`` with the fields of every operation's row as the spec says them.
    ValueError when the table lacks an operation, or names one the server lacks."""
    lines = text.split("\n")
    start = lines.index("## Operations")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("#"))
    seen = []
    for i in range(start, end):
        match = _ROW.match(lines[i])
        if match is None:
            continue
        op = match["op"]
        if op not in OPS:
            raise ValueError(f"docs/protocol.md names an operation the server lacks: {op}")
        seen.append(op)
        lines[i] = f"| `{op}` | {VERBS[op].describe()} | {match['result']} |"
    missing = sorted(OPS - set(seen))
    if missing:
        raise ValueError(f"docs/protocol.md's table of operations lacks: {', '.join(missing)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the document differs")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    try:
        new = rewritten(text)
    except ValueError as exc:
        print(f"protocol_docs: {exc}", file=sys.stderr)
        return 1
    if new == text:
        return 0
    if args.check:
        sys.stdout.writelines(
            difflib.unified_diff(
                text.splitlines(keepends=True), new.splitlines(keepends=True), "docs", "spec"
            )
        )
        print("protocol_docs: docs/protocol.md differs from the spec", file=sys.stderr)
        return 1
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
