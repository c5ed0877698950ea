"""The procwindow command line, without opening the window."""

from __future__ import annotations

import subprocess
import sys

import pytest

import procwindow
from procwindow import cli


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"procwindow {procwindow.__version__}\n"


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "procwindow -- CMD" in capsys.readouterr().out


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--no-such-option"]) == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_command_after_double_dash() -> None:
    args = cli.parse_args(["--", "sh", "-c", "echo -- done"])
    assert args.argv == ["sh", "-c", "echo -- done"]
    assert args.subcommand is None
    assert cli.parse_args([]).argv is None


def test_double_dash_without_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--"]) == 2
    assert "expected a command" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("missing", "message"),
    [("procwindow.app", "has no window"), ("PySide6.QtQml", "needs PySide6")],
)
def test_window_unavailable(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    missing: str,
    message: str,
) -> None:
    def fail(name: str) -> object:
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)

    monkeypatch.setattr(cli.importlib, "import_module", fail)
    assert cli.main([]) == 2
    assert message in capsys.readouterr().err


def test_window_gets_the_parsed_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    class App:
        @staticmethod
        def run(args: object) -> int:
            seen.append(args)
            return 0

    monkeypatch.setattr(cli.importlib, "import_module", lambda name: App)
    assert cli.main(["--", "make"]) == 0
    assert [a.argv for a in seen] == [["make"]]


def test_python_dash_m() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "procwindow", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("procwindow ")
