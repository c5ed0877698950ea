"""The package layout that pyproject.toml declares, and how procwindow._paths finds data."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from procwindow import _paths

ROOT = Path(__file__).resolve().parent.parent


def _setuptools_config() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        config: dict[str, object] = tomllib.load(f)["tool"]["setuptools"]
    return config


def test_every_python_package_is_listed_in_pyproject() -> None:
    # The list is explicit (qml/ and resources/ are mapped into the package), so a new
    # subpackage that is not added to it would be missing from the wheel.
    listed = set(_setuptools_config()["packages"])  # type: ignore[call-overload]
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "procwindow").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_qml_and_resources_are_installed_inside_the_package() -> None:
    config = _setuptools_config()
    assert config["package-dir"] == {"procwindow.qml": "qml", "procwindow.resources": "resources"}
    package_data = config["package-data"]
    assert isinstance(package_data, dict)
    assert "py.typed" in package_data["procwindow"]
    # Recursive: the QML module lives in subdirectories named after its URI.
    assert package_data["procwindow.qml"] == ["**/*"]
    assert not (ROOT / "procwindow" / "qml").exists(), "qml/ lives at the top of the repository"
    assert not (ROOT / "procwindow" / "resources").exists()


def test_the_qml_module_lives_where_its_uri_says() -> None:
    # qml/ is the import path; `import Procwindow.Ui` is qml/Procwindow/Ui/, and the
    # type information of the Python-registered `import Procwindow` is in qml/tooling/
    # (for qmllint; not on the import path, where it would hide the registered types).
    from procwindow.qt.window import QML_MODULE

    module = _paths.qml_dir().joinpath(*QML_MODULE.split("."))
    assert (module / "qmldir").read_text().splitlines()[0] == f"module {QML_MODULE}"
    assert (module / "Main.qml").is_file() and (module / "ProcWindow.qml").is_file()
    types = _paths.qml_dir() / "tooling" / "Procwindow"
    assert (types / "qmldir").read_text().splitlines()[0] == "module Procwindow"
    assert (types / "procwindow.qmltypes").is_file()
    assert not (_paths.qml_dir() / "Procwindow" / "qmldir").exists()
    assert not list(_paths.qml_dir().glob("*.qml")), "QML files belong to the module directory"


@pytest.mark.parametrize("layout", ["wheel", "checkout"])
def test_paths_find_qml_and_resources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    package = tmp_path / "procwindow"
    package.mkdir()
    base = package if layout == "wheel" else tmp_path
    (base / "qml").mkdir()
    (base / "resources").mkdir()
    monkeypatch.setattr(_paths, "_PACKAGE_DIR", package)
    assert _paths.qml_dir() == base / "qml"
    assert _paths.resources_dir() == base / "resources"


def test_paths_say_where_they_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_paths, "_PACKAGE_DIR", tmp_path / "procwindow")
    with pytest.raises(FileNotFoundError, match="no qml/ directory"):
        _paths.qml_dir()
