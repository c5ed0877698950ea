"""The fast tier proves every promise of the README.

A promise is a feature section of the README (from "Library quickstart" up to
"Architecture"), each bold lead in those sections (``**Disk is bounded.**``, a
paragraph's ``**The output pane.**``), and each bold bullet of "Guarantees and
limits" (the list of limits after it promises nothing). A test proves one with
``@pytest.mark.promise("Section: lead")``, or ``promise("Section")``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The feature sections run from the first of these headings up to the second.
FEATURES = ("## Library quickstart", "## Architecture")
GUARANTEES = "## Guarantees and limits"
#: Where the guarantees end and the limits begin.
LIMITS = "Limits:"

_BOLD_LEAD = re.compile(r"^(?:- )?\*\*(.+?)\*\*")


def _plain(text: str) -> str:
    return text.replace("`", "").strip().rstrip(".").strip()


def readme_promises(text: str) -> list[str]:
    """The promises of a README, in order: section titles and ``Section: lead``."""
    promises: list[str] = []
    in_features = in_guarantees = False
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            in_features = line == FEATURES[0] or (in_features and line != FEATURES[1])
            in_guarantees = line == GUARANTEES
        if not (in_features or in_guarantees):
            continue
        if line.startswith(("## ", "### ")):
            section = _plain(line.lstrip("#"))
            if in_features:
                promises.append(section)
        elif in_guarantees and line.startswith(LIMITS):
            in_guarantees = False
        elif match := _BOLD_LEAD.match(line):
            promises.append(f"{section}: {_plain(match[1])}")
    return promises


def test_promises_are_read_from_sections_bold_leads_and_guarantees() -> None:
    readme = textwrap.dedent(
        """\
        # tool
        ## Quick start
        **Not a promise.** Set-up comes before the features.
        ## Library quickstart
        ### History
        - **Disk is bounded.** Per process…
          **not a lead** inside a bullet
        ## The window
        **The `output` pane.** Filters…
        ## Architecture
        - **Not a promise.**
        ## Guarantees and limits
        - **Exit is seen.** A pidfd…
        Limits:
        - **Not a promise either.**
        ## Development
        """
    )
    assert readme_promises(readme) == [
        "Library quickstart",
        "History",
        "History: Disk is bounded",
        "The window",
        "The window: The output pane",
        "Guarantees and limits: Exit is seen",
    ]


def fast_tier_promises(tmp_path: Path) -> dict[str, list[str]]:
    """Each test of the fast tier, and the promises it is marked with (a collection)."""
    out = tmp_path / "promises.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            f"--promises-to={out}",
            "tests",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def test_every_promise_of_the_readme_has_a_test_in_the_fast_tier(tmp_path: Path) -> None:
    promises = readme_promises((ROOT / "README.md").read_text())
    assert len(promises) > 30, promises  # the parser still finds the README's promises
    marked = fast_tier_promises(tmp_path)
    proved: dict[str, list[str]] = {}
    for nodeid, names in marked.items():
        for name in names:
            proved.setdefault(name, []).append(nodeid)
    unknown = {name: tests for name, tests in proved.items() if name not in promises}
    assert not unknown, f"tests name promises the README does not make: {unknown}"
    missing = [name for name in promises if name not in proved]
    assert not missing, "README promises without a test in the fast tier:\n  " + "\n  ".join(
        missing
    )
