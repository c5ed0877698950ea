"""The QML module loads, and renders, with zero warnings, and keeps to its house rules."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtQml import QQmlComponent, QQmlEngine
from PySide6.QtQuick import QQuickWindow

from procwindow import app as window_app
from procwindow._paths import qml_dir
from procwindow.core import Supervisor
from procwindow.qt.window import QML_MODULE, prepare_engine

from .conftest import MakeWorkspace, Run
from .helpers import find_item, py, settle, until

ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = qml_dir().joinpath(*QML_MODULE.split("."))
QML_FILES = sorted(p.name for p in MODULE_DIR.glob("*.qml"))
# What a QML file may hold besides bindings and one-line handlers: nothing. These
# start a statement of their own (a block body, a declaration, a loop...).
STATEMENT = re.compile(r"^(if|else|for|while|switch|case|return|const|let|var)\b")


@pytest.mark.parametrize("name", QML_FILES)
def test_every_qml_file_compiles_without_warnings(name: str) -> None:
    engine = QQmlEngine()
    prepare_engine(engine)
    errors: list[str] = []
    engine.warnings.connect(lambda ws: errors.extend(w.toString() for w in ws))
    component = QQmlComponent(engine, QUrl.fromLocalFile(str(MODULE_DIR / name)))
    assert component.isReady(), component.errorString()
    assert not errors
    # Now, not later: an engine holds a loader thread (and its eventfd) until deleted.
    del component, engine
    gc.collect()


def test_the_windows_load_from_the_module_by_uri() -> None:
    engine = QQmlEngine()
    prepare_engine(engine)
    for name in ("Main", "ProcWindow"):
        component = QQmlComponent(engine)
        component.loadFromModule(QML_MODULE, name)
        assert component.isReady(), component.errorString()
        del component
    del engine
    gc.collect()


def test_every_qml_file_follows_the_house_rules() -> None:
    assert QML_FILES
    for path in MODULE_DIR.glob("*.qml"):
        text = path.read_text()
        first = text.lstrip().splitlines()[0]
        assert first in ("pragma ComponentBehavior: Bound", "pragma Singleton"), path.name
        # The output pane is a ListView: a TextArea cannot hold a million lines.
        assert "TextArea" not in text, path.name
        # Typed properties: the Python types come from `import Procwindow`.
        assert "property var " not in text, path.name
        # Layout, bindings and shortcuts only: a function or a handler is one line.
        for number, line in enumerate(text.splitlines(), 1):
            code = line.strip()
            where = f"{path.name}:{number}: {code}"
            assert not STATEMENT.match(code), where
            if re.match(r"function \w+\(", code):
                assert code.endswith("}"), where
            assert not re.search(r"(:|=>)\s*\{$", code), where
    qmldir = (MODULE_DIR / "qmldir").read_text()
    assert qmldir.splitlines()[0] == f"module {QML_MODULE}"
    assert qmldir.count(".qml") == len(QML_FILES)


def test_qmltypes_of_the_python_module_are_current() -> None:
    # qmllint reads qml/tooling/Procwindow/procwindow.qmltypes for `import Procwindow`.
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "qmltypes.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # `depends QtQuick`: Sparkline's base, QQuickPaintedItem, is a QtQuick type.
    assert (qml_dir() / "tooling" / "Procwindow" / "qmldir").read_text().splitlines() == [
        "module Procwindow",
        "typeinfo procwindow.qmltypes",
        "depends QtQuick",
    ]
    # Not on the run-time import path: there, a qmldir module "Procwindow" would hide
    # the types Python registers.
    assert not (qml_dir() / "Procwindow" / "qmldir").exists()


def test_the_qmltypes_check_tells_a_new_layout_from_a_changed_api() -> None:
    # Another PySide6 release may lay the file out differently: not stale. A
    # renamed signal is stale whoever wrote the file.
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import qmltypes
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    current = (qml_dir() / "tooling" / "Procwindow" / "procwindow.qmltypes").read_text()
    assert qmltypes.is_current(current, current)
    other_release = current.replace(qmltypes.STAMP, qmltypes.STAMP + "0.0.0-")
    relaid = "\n".join("  " + line for line in reversed(other_release.splitlines()))
    assert qmltypes.is_current(current, relaid)
    assert not qmltypes.is_current(current, current.replace("\n", "\n\n", 3))  # same release
    renamed = other_release.replace('name: "actionFailed"', 'name: "failed"')
    assert renamed != other_release
    assert not qmltypes.is_current(current, renamed)
    assert not qmltypes.is_current(current, None)


def test_icons_exist_for_every_name_the_qml_uses() -> None:
    icons = qml_dir().parent / "resources" / "icons"
    names = {"stream", "term", "kill", "dismiss", "restart", "pin", "pin-off", "copy", "clear"}
    names |= {"filter", "run", "live", "close", "processes"}
    for name in names:
        svg = (icons / f"{name}.svg").read_text()
        assert 'viewBox="0 0 16 16"' in svg, name


def test_main_window_loads_and_renders_without_warnings(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        await sup.spawn(py("print('hello')"), session="s1", agent="a1")
        workspace = make_workspace()
        workspace.session_model.addSession("s2", ["b1"])
        workspace.active_scope.setScope("s1", "")
        window = workspace.load()
        assert window.isVisible()
        await until(lambda: find_item(window, "sessionNode-s1") is not None, what="tree")
        assert find_item(window, "agentNode-s2-b1") is not None
        await settle(0.2)
        image = window.grabWindow()
        assert not image.isNull()

    run(scenario())


def test_proc_window_opens_and_closes_without_warnings(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        workspace = make_workspace()
        proc = await sup.spawn(py("print('\\x1b[31mred\\x1b[0m')"), session="s1", agent="a1")
        window = window_app.open_proc_window(sup, "s1", "a1", workspace.engine)
        assert isinstance(window, QQuickWindow)
        assert window.title() == "Processes - s1/a1"
        await until(lambda: find_item(window, f"statusText-{proc.id}") is not None)
        await settle(0.3)
        window.close()
        await until(lambda: not window_app.proc_windows(), what="window released")

    run(scenario())


def test_qml_dir_is_next_to_resources() -> None:
    # Theme.qml (in qml/Procwindow/Ui/) finds the icons at ../../../resources/icons,
    # in a checkout and in a wheel.
    assert (qml_dir().parent / "resources" / "icons").is_dir()
    assert (MODULE_DIR / "Theme.qml").read_text().count('"../../../resources/icons/"') == 1
