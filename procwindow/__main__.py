"""``python -m procwindow``: the same as the ``procwindow`` command."""

from __future__ import annotations

from procwindow.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
