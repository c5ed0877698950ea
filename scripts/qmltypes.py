"""Write qml/tooling/Procwindow/procwindow.qmltypes: the QML types procwindow.qt registers.

``import Procwindow`` is a module Python registers at run time (``@QmlElement``);
qmllint knows its types only from this file. The classes are the ones decorated
with ``@QmlElement`` in ``procwindow/qt/**/*.py``. Their meta-objects are read
at run time (the properties that ``qt_property`` and ``stored_property`` make
are invisible to a static parser such as pyside6-metaobjectdump), written in
moc's JSON format, and handed to pyside6-qmltyperegistrar, which writes the
``.qmltypes`` file.

The file is for tools only (``pyside6-qmllint -I qml/tooling``, qmlls): at run time
the types come from Python, and a ``qmldir`` for ``Procwindow`` on the engine's
import path would stand in their way, so it lives outside ``qml/Procwindow/``.

    scripts/qmltypes            rewrite the file
    scripts/qmltypes --check    exit 1 if the file is stale: it differs from what
                                would be written (or, written by another PySide6
                                release, says something else; see is_current)
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import PySide6  # noqa: E402
from PySide6.QtCore import QMetaMethod, QMetaObject, QObject  # noqa: E402

#: The module the types are registered in, and where its type information goes.
MODULE = "Procwindow"
MAJOR, MINOR = 1, 0
TARGET = ROOT / "qml" / "tooling" / "Procwindow" / "procwindow.qmltypes"
SOURCES = ROOT / "procwindow" / "qt"
#: Qt's own meta-types, for the Qt base classes and value types the classes use.
FOREIGN = ("qt6core_metatypes.json", "qt6gui_metatypes.json", "qt6qml_metatypes.json")
#: The comment that names the PySide6 release that wrote the file.
STAMP = "// Written by scripts/qmltypes with PySide6 "
#: moc's JSON format revision (Qt 6).
OUTPUT_REVISION = 69


@dataclass(frozen=True)
class Registered:
    """A class decorated with ``@QmlElement``, as the source declares it."""

    module: str
    name: str
    uncreatable: str | None  # the reason given to @QmlUncreatable
    singleton: bool


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def registered_classes() -> list[Registered]:
    """Every ``@QmlElement`` class under procwindow/qt, in file and line order."""
    found: list[Registered] = []
    for path in sorted(SOURCES.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            names = {_decorator_name(d): d for d in node.decorator_list}
            if "QmlElement" not in names:
                continue
            reason = None
            call = names.get("QmlUncreatable")
            if isinstance(call, ast.Call) and call.args:
                arg = call.args[0]
                reason = arg.value if isinstance(arg, ast.Constant) else ""
            found.append(Registered(module, node.name, reason, "QmlSingleton" in names))
    return found


def _arguments(method: QMetaMethod) -> list[dict[str, str]]:
    names = [bytes(n.data()).decode() for n in method.parameterNames()]
    types = [bytes(t.data()).decode() for t in method.parameterTypes()]
    return [
        {"name": name or f"arg{i}", "type": type_}
        for i, (name, type_) in enumerate(zip(names, types, strict=True))
    ]


def _class_json(cls: type[QObject], entry: Registered | None) -> dict[str, Any]:
    meta: QMetaObject = cls.staticMetaObject
    infos: list[dict[str, str]] = []
    if entry is not None:
        infos.append({"name": "QML.Element", "value": "auto"})
        if entry.uncreatable is not None:
            infos.append({"name": "QML.Creatable", "value": "false"})
            infos.append({"name": "QML.UncreatableReason", "value": entry.uncreatable})
        if entry.singleton:
            infos.append({"name": "QML.Singleton", "value": "true"})
    properties = []
    for index in range(meta.propertyOffset(), meta.propertyCount()):
        prop = meta.property(index)
        name = prop.name()
        item: dict[str, Any] = {
            "name": name,
            "type": prop.typeName(),
            "read": name,
            "index": index - meta.propertyOffset(),
            "constant": prop.isConstant(),
            "designable": True,
            "final": False,
            "required": False,
            "scriptable": True,
            "stored": True,
            "user": False,
        }
        if prop.isWritable():
            item["write"] = "set" + name[:1].upper() + name[1:]
        if prop.hasNotifySignal():
            item["notify"] = bytes(prop.notifySignal().name().data()).decode()
        properties.append(item)
    signals, slots = [], []
    for index in range(meta.methodOffset(), meta.methodCount()):
        method = meta.method(index)
        item = {
            "access": "public",
            "name": bytes(method.name().data()).decode(),
            "arguments": _arguments(method),
            "returnType": method.typeName() or "void",
        }
        if method.methodType() == QMetaMethod.MethodType.Signal:
            signals.append(item)
        elif method.methodType() == QMetaMethod.MethodType.Slot:
            slots.append(item)
    return {
        "className": meta.className(),
        "qualifiedClassName": meta.className(),
        "object": True,
        "superClasses": [{"access": "public", "name": meta.superClass().className()}],
        "classInfos": infos,
        "properties": properties,
        "signals": signals,
        "slots": slots,
    }


def metatypes() -> list[dict[str, Any]]:
    """moc's JSON for every registered class and the Python base classes it has."""
    import procwindow.qt

    files: dict[str, list[dict[str, Any]]] = {}
    done: set[str] = set()
    for entry in registered_classes():
        cls = getattr(procwindow.qt, entry.name, None)
        if cls is None:
            cls = getattr(importlib.import_module(entry.module), entry.name)
        # A Python base class between the class and Qt's goes in too (without an export).
        for klass in reversed(cls.__mro__):
            if not (isinstance(klass, type) and issubclass(klass, QObject)):
                continue
            if klass.__module__.startswith(("PySide6", "shiboken6")) or klass.__name__ in done:
                continue
            done.add(klass.__name__)
            source = Path(sys.modules[klass.__module__].__file__ or "").resolve()
            files.setdefault(str(source.relative_to(ROOT)), []).append(
                _class_json(klass, entry if klass is cls else None)
            )
    return [
        {"classes": classes, "inputFile": name, "outputRevision": OUTPUT_REVISION}
        for name, classes in sorted(files.items())
    ]


def _registrar() -> str:
    beside = Path(sys.executable).parent / "pyside6-qmltyperegistrar"
    found = str(beside) if beside.exists() else shutil.which("pyside6-qmltyperegistrar")
    if found is None:
        raise SystemExit("qmltypes: pyside6-qmltyperegistrar not found (PySide6 installs it)")
    return found


def _foreign() -> str:
    import PySide6

    directory = Path(PySide6.__file__).resolve().parent / "Qt" / "metatypes"
    return ",".join(str(directory / name) for name in FOREIGN)


def generate() -> str:
    """The text of the .qmltypes file, as qmltyperegistrar writes it."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "procwindow_metatypes.json"
        source.write_text(json.dumps(metatypes(), indent=4) + "\n")
        output = Path(tmp) / TARGET.name
        command = [
            _registrar(),
            "--generate-qmltypes",
            str(output),
            "-o",
            str(Path(tmp) / "registrations.cpp"),
            "--import-name",
            MODULE,
            "--major-version",
            str(MAJOR),
            "--minor-version",
            str(MINOR),
            f"--foreign-types={_foreign()}",
            str(source),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not output.exists():
            raise SystemExit(f"qmltypes: qmltyperegistrar failed:\n{done.stdout}{done.stderr}")
        return output.read_text()


def _stamped(text: str) -> str:
    """``text`` with the PySide6 release that wrote it, after the tooling import."""
    head, _, rest = text.partition("\n")
    return f"{head}\n\n{STAMP}{PySide6.__version__}\n{rest}"


def _stamp_of(text: str) -> str | None:
    for line in text.splitlines()[:10]:
        if line.startswith(STAMP):
            return line.removeprefix(STAMP).strip()
    return None


def _api(text: str) -> list[str]:
    """What a .qmltypes file says, without its layout: its lines, stripped and
    sorted, less comments, blank lines and source positions (which a release of
    qmltyperegistrar may order, indent or fill in differently)."""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return sorted(
        line for line in lines if line and not line.startswith(("//", "file:", "lineNumber:"))
    )


def is_current(text: str, current: str | None) -> bool:
    """Whether ``current`` (the file as committed) is what ``text`` would be.

    Written by the same PySide6 release, the files must be equal. Written by
    another, only the API must be: a new qmltyperegistrar may lay the file out
    differently, and that is not a stale file.
    """
    if current is None:
        return False
    if _stamp_of(current) == PySide6.__version__:
        return text == current
    return _api(text) == _api(current)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args()
    text = _stamped(generate())
    current = TARGET.read_text() if TARGET.exists() else None
    relative = TARGET.relative_to(ROOT)
    if args.check:
        if not is_current(text, current):
            print(f"qmltypes: {relative} is stale; run scripts/qmltypes", file=sys.stderr)
            return 1
        return 0
    if text != current:
        TARGET.parent.mkdir(parents=True, exist_ok=True)
        TARGET.write_text(text)
        print(f"qmltypes: wrote {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
