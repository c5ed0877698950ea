"""process-compose files as workspaces: each key mapped onto a workspace's.

A process-compose file (``process-compose.yaml``) is read into the data a TOML
workspace file parses to, and that data goes through the workspace's own
checker: every check, bound and message is the TOML file's. Only what
process-compose says differently is checked here: its types (an integer where
Go reads an int), its names for conditions and restart policies, and what
procwindow cannot do as process-compose does, refused in one line that says so.

The mapping (README: Workspaces, "process-compose files"):

- a process is a command of that name, alone in an agent of that name, in the
  session named by its ``namespace`` (``default`` unless given, as
  process-compose names it): a namespace is a group that starts and stops
  together, as a session is, and each process is controlled on its own, as an
  agent's scope is;
- ``command`` runs as ``bash -c COMMAND`` (``$COMPOSE_SHELL``, or the file's
  ``shell``, choose another), ``entrypoint`` as it is;
- ``$NAME``, ``${NAME}`` and ``$$`` in values are expanded from the environment
  and the ``.env`` next to the file, unless ``disable_env_expansion``;
- the ``.env`` file's variables, the top ``environment``, then the process's,
  and ``PC_PROC_NAME``/``PC_REPLICA_NUM`` make each command's environment.

Errors name the YAML's keys (``processes.api.depends_on.db.condition``) and
lines: :data:`Places` maps each key of the data onto the YAML key it came from.
"""

from __future__ import annotations

import difflib
import os
import signal
from collections.abc import Callable
from typing import Any

from ..core import MAX_BACKOFF, MAX_RESTARTS
from ._compose_probes import probe, readiness
from ._compose_yaml import Node, Places, Scalar, ValueReader, kind, locate, read_tree
from ._toml_lines import Key

__all__ = ["Places", "compose_data", "locate"]

#: The condition each process-compose condition is here.
CONDITIONS = {
    "process_started": "started",
    "process_healthy": "ready",
    "process_log_ready": "ready",
    "process_completed": "completed",
    "process_completed_successfully": "completed_successfully",
}
#: availability.restart: the restart policy here, and whether its end ends the workspace.
RESTARTS = {
    "no": ("no", False),
    "on_failure": ("on-failure", False),
    "always": ("always", False),
    "exit_on_failure": ("no", True),
}
#: Restarts in a row before a command is given up: process-compose's 0 is
#: "unlimited", read as the most a workspace allows.
_UNLIMITED = MAX_RESTARTS
#: A constant backoff (factor 1) whose loop ends only after a run this long (the
#: longest backoff): process-compose counts every restart, not those in a row.
_LONG_RUN = MAX_BACKOFF
_SIGTERM = int(signal.SIGTERM)
#: The most replicas of one process.
_MAX_REPLICAS = 100

# Keys read, and keys refused with why. A value of null is as if the key were absent.
_TOP = {
    "version",
    "processes",
    "environment",
    "shell",
    "disable_env_expansion",
    "is_dotenv_disabled",
    # process-compose's own logging and screen: nothing a process does
    "is_strict",
    "log_level",
    "log_length",
    "log_format",
    "is_tui_disabled",
    # what procwindow does always: dependents stop first
    "ordered_shutdown",
}
#: Refused at the top and in a process alike.
_REFUSED = {
    "log_location": "procwindow keeps each process's output itself (ctl out, the window)",
    "log_configuration": "procwindow keeps each process's output itself",
    "vars": "Go templates are not rendered",
}
_TOP_REFUSED = {
    **_REFUSED,
    "extends": "one file is read; merge it into this one",
    "env_cmds": "environment commands are not run",
    "services": "this reads like a Docker Compose file, whose services run containers",
    "mcp_server": "procwindow mcp serves agents itself; run it beside",
}
_PROCESS = {
    "command",
    "entrypoint",
    "working_dir",
    "environment",
    "namespace",
    "depends_on",
    "readiness_probe",
    "liveness_probe",
    "ready_log_line",
    "availability",
    "shutdown",
    "is_tty",
    "is_interactive",
    "disabled",
    "env_file",
    "description",
    "disable_ansi_colors",
    "replicas",
    "success_exit_codes",
    # how long a daemon may take to start (daemons are refused)
    "launch_timeout_seconds",
}
#: Flags accepted as false, refused as true.
_PROCESS_FLAGS = {
    "is_daemon": "a daemon leaves the process procwindow watches; run it in the foreground",
    "is_foreground": "every process starts on its own; run it with procwindow ctl run",
    "is_elevated": "procwindow does not run sudo",
}
_PROCESS_REFUSED = {**_REFUSED, "extends": "one process's keys are not merged into another's"}
_AVAILABILITY = {"restart", "backoff_seconds", "max_restarts", "exit_on_end"}
_AVAILABILITY_REFUSED = {
    "exit_on_skipped": "exit_on_end and exit_on_failure end the workspace when the process"
    " is skipped too",
}
_SHUTDOWN = {"command", "signal", "timeout_seconds", "parent_only"}
_DEPENDENCY = {"condition"}
_SHELL = {"shell_command", "shell_argument", "elevated_shell_command", "elevated_shell_argument"}


def _by_replica(deps: dict[str, str], replicas: dict[str, list[str]]) -> dict[str, str]:
    """``depends_on`` with a replicated process's name standing for each of its
    replicas; a replica named on its own keeps its own condition."""
    out: dict[str, str] = {}
    for dep, condition in deps.items():
        for name in replicas.get(dep, ()):
            out.setdefault(name, condition)
    out.update((dep, condition) for dep, condition in deps.items() if dep not in replicas)
    return out


def compose_data(
    text: str, path: str, places: Places, dotenv: Callable[[], dict[str, str]]
) -> dict[str, Any]:
    """The workspace data of a process-compose file's ``text``; ``places`` is
    filled in; ``dotenv()`` gives the variables of the ``.env`` next to it."""
    root = read_tree(text, path)
    return _Reader(path, places, dotenv).workspace(root)


class _Reader(ValueReader):
    def __init__(self, path: str, places: Places, dotenv: Callable[[], dict[str, str]]) -> None:
        super().__init__(path, places)
        self._dotenv_of = dotenv
        self.shell = ("bash", "-c")
        self.probe_shell = ("bash", "-c")

    # -- the file ----------------------------------------------------------------

    def workspace(self, root: Node | None) -> dict[str, Any]:
        if root is None:
            return {}
        top = self.mapping(root, (), _TOP, _TOP_REFUSED)
        if "disable_env_expansion" in top:
            # Read as written: it says whether anything is expanded.
            self.expanding = False
            self.expanding = not self.boolean(
                top["disable_env_expansion"], ("disable_env_expansion",)
            )
        self.places[("env_file",)] = ((), None)  # the .env file: its errors name it
        self.dotenv = self._dotenv_of()
        inject = not (
            "is_dotenv_disabled" in top
            and self.boolean(top["is_dotenv_disabled"], ("is_dotenv_disabled",))
        )
        env: list[tuple[str, str, Node, Key]] = []
        if "environment" in top:
            env = self.environment(top["environment"], ("environment",))
        default_shell = os.environ.get("COMPOSE_SHELL") or "bash"
        self.shell = self.probe_shell = (default_shell, "-c")
        if "shell" in top:
            shell = self.mapping(top["shell"], ("shell",), _SHELL)
            self.shell = (
                self.string(shell["shell_command"], ("shell", "shell_command"))
                if "shell_command" in shell
                else default_shell,
                self.string(shell["shell_argument"], ("shell", "shell_argument"))
                if "shell_argument" in shell
                else "-c",
            )
        for name in ("version", "log_level", "log_format"):
            if name in top:
                self.string(top[name], (name,))
        for name in ("is_strict", "is_tui_disabled", "ordered_shutdown"):
            if name in top:
                self.boolean(top[name], (name,))
        if "log_length" in top:
            self.integer(top["log_length"], ("log_length",))
        base_env = {
            name: value for name, value in self.dotenv.items() if inject and name not in os.environ
        }
        processes = self.mapping(top.get("processes", Node({}, root.line)), ("processes",), None)
        return self.sessions(processes, base_env, env)

    def sessions(
        self,
        processes: dict[str, Node],
        base_env: dict[str, str],
        env: list[tuple[str, str, Node, Key]],
    ) -> dict[str, Any]:
        sessions: dict[str, dict[str, Any]] = {}
        ready_kinds: dict[str, str | None] = {}
        conditions: list[tuple[str, str, Node, Key]] = []
        replicas: dict[str, list[str]] = {}
        for name, node in processes.items():
            key: Key = ("processes", name)
            table = self.mapping(node, key, _PROCESS | set(_PROCESS_FLAGS), _PROCESS_REFUSED)
            namespace, ns_node, ns_key = "default", node, key
            if "namespace" in table:
                ns_node, ns_key = table["namespace"], (*key, "namespace")
                if isinstance(ns_node.value, list) and len(ns_node.value) > 1:
                    raise self.fail(
                        ns_node,
                        ns_key,
                        "is not read (not supported: a process is in one namespace)",
                    )
                if isinstance(ns_node.value, list) and ns_node.value:
                    ns_node, ns_key = ns_node.value[0], (*ns_key, 0)
                namespace = self.string(ns_node, ns_key)
            if namespace not in sessions:
                si = len(sessions)
                sessions[namespace] = {"name": namespace, "agent": []}
                self.place(("session", si), ns_node, ns_key)
            si = list(sessions).index(namespace)
            agents = sessions[namespace]["agent"]
            where: Key = ("session", si, "agent", len(agents), "command", 0)
            self.place(where[:4], node, key)
            command = self.process(name, node, key, table, where, base_env, env, conditions)
            names = self.replica_names(name, table, key)
            commands = [command]
            if names:
                replicas[name] = names
                commands = [self.replica(command, n, i, where) for i, n in enumerate(names)]
            for each in (name, *names):
                ready_kinds[each] = (
                    "readiness_probe"
                    if "readiness_probe" in table
                    else "ready_log_line"
                    if "ready_log_line" in table
                    else None
                )
            agents.append({"name": name, "command": commands})
        for session in sessions.values():
            for agent in session["agent"]:
                for command in agent["command"]:
                    if command.get("depends_on") and replicas:
                        command["depends_on"] = _by_replica(command["depends_on"], replicas)
        # A condition waits for the kind of readiness its dependency has.
        for dep, condition, node, key in conditions:
            wants = {"process_healthy": "readiness_probe", "process_log_ready": "ready_log_line"}
            has = ready_kinds.get(dep)
            if condition in wants and has is not None and has != wants[condition]:
                raise self.fail(
                    node,
                    key,
                    f"{condition} waits for a {wants[condition]}, and {dep!r} has a {has}",
                )
        return {"session": list(sessions.values())}

    def process(
        self,
        name: str,
        node: Node,
        key: Key,
        table: dict[str, Node],
        where: Key,
        base_env: dict[str, str],
        env: list[tuple[str, str, Node, Key]],
        conditions: list[tuple[str, str, Node, Key]],
    ) -> dict[str, Any]:
        self.place(where, node, key)
        for flag, why in _PROCESS_FLAGS.items():
            if flag in table and self.boolean(table[flag], (*key, flag)):
                raise self.fail(table[flag], (*key, flag), f"is not read (not supported: {why})")
        for name_ in ("description",):
            if name_ in table:
                self.string(table[name_], (*key, name_))
        for flag in ("disable_ansi_colors",):
            if flag in table:
                self.boolean(table[flag], (*key, flag))
        if "launch_timeout_seconds" in table:
            self.integer(table["launch_timeout_seconds"], (*key, "launch_timeout_seconds"))
        if "success_exit_codes" in table:
            self.success_codes(table["success_exit_codes"], (*key, "success_exit_codes"))
        data: dict[str, Any] = {"name": name}
        data["argv"] = self.argv(node, key, table, where)
        if "working_dir" in table:
            sub = (*key, "working_dir")
            data["cwd"] = self.rendered(table["working_dir"], sub)
            self.place((*where, "cwd"), table["working_dir"], sub)
        data["env"] = self.env(name, table, key, where, base_env, env)
        for tty in ("is_tty", "is_interactive"):  # a terminal, which write() types into
            if tty in table and self.boolean(table[tty], (*key, tty)):
                data["pty"] = True
                self.place((*where, "pty"), table[tty], (*key, tty))
        if "disabled" in table and self.boolean(table["disabled"], (*key, "disabled")):
            data["disabled"] = True
            self.place((*where, "disabled"), table["disabled"], (*key, "disabled"))
        if "env_file" in table:
            data["env_file"] = self.env_files(table["env_file"], (*key, "env_file"))
            self.place((*where, "env_file"), table["env_file"], (*key, "env_file"))
        if "depends_on" in table:
            data["depends_on"] = self.depends_on(table["depends_on"], key, where, conditions)
        readiness(self, self.probe_shell, table, key, where, data)
        if "liveness_probe" in table:
            live = table["liveness_probe"]
            data["liveness"] = probe(self, self.probe_shell, live, (*key, "liveness_probe"), where)
        if "availability" in table:
            self.availability(table["availability"], (*key, "availability"), where, data)
        if "shutdown" in table:
            self.shutdown(table["shutdown"], (*key, "shutdown"), where, data)
        return data

    def replica_names(self, name: str, table: dict[str, Node], key: Key) -> list[str]:
        """``replicas``: the names of its replicas (``NAME-0``…), none for one."""
        if "replicas" not in table:
            return []
        count = self.integer(table["replicas"], (*key, "replicas"))
        if not 1 <= count <= _MAX_REPLICAS:
            raise self.fail(
                table["replicas"], (*key, "replicas"), f"must be 1 to {_MAX_REPLICAS}, got {count}"
            )
        return [f"{name}-{i}" for i in range(count)] if count > 1 else []

    def replica(self, command: dict[str, Any], name: str, i: int, where: Key) -> dict[str, Any]:
        """Replica ``i`` of ``command`` (placed at ``where``): its name, and
        its PC_PROC_NAME and PC_REPLICA_NUM; its keys are placed as the first's."""
        if i:
            for data_key, place in list(self.places.items()):
                if data_key[: len(where)] == where:
                    self.places[(*where[:-1], i, *data_key[len(where) :])] = place
        env = {**command["env"], "PC_PROC_NAME": name, "PC_REPLICA_NUM": str(i)}
        return {**command, "name": name, "env": env}

    def success_codes(self, node: Node, key: Key) -> None:
        """``success_exit_codes``: read if it says what procwindow does (0 only)."""
        if not isinstance(node.value, list):
            raise self.fail(node, key, f"must be a list of exit codes, got {kind(node)}")
        for i, item in enumerate(node.value):
            if self.integer(item, (*key, i)) != 0:
                raise self.fail(
                    item, (*key, i), "is not read (not supported: only exit code 0 is a success)"
                )

    def env_files(self, node: Node, key: Key) -> str | list[str]:
        """``env_file``: a dotenv file, or a list of them (beside this file)."""
        if isinstance(node.value, list):
            return [self.rendered(item, (*key, i)) for i, item in enumerate(node.value)]
        return self.rendered(node, key)

    def argv(self, node: Node, key: Key, table: dict[str, Node], where: Key) -> list[str]:
        if "command" in table and "entrypoint" in table:
            raise self.fail(
                table["entrypoint"], (*key, "entrypoint"), "give command or entrypoint, not both"
            )
        if "command" in table:
            sub = (*key, "command")
            self.place((*where, "argv"), table["command"], sub)
            return [*self.shell, self.rendered(table["command"], sub)]
        if "entrypoint" in table:
            sub = (*key, "entrypoint")
            entry = table["entrypoint"]
            if not isinstance(entry.value, list) or not entry.value:
                raise self.fail(
                    entry, sub, f"must be a non-empty list of strings, got {kind(entry)}"
                )
            self.place((*where, "argv"), entry, sub)
            out = []
            for i, item in enumerate(entry.value):
                self.place((*where, "argv", i), item, (*sub, i))
                out.append(self.string(item, (*sub, i)))
            return out
        raise self.fail(node, key, "needs a command (or an entrypoint)")

    def env(
        self,
        name: str,
        table: dict[str, Node],
        key: Key,
        where: Key,
        base_env: dict[str, str],
        env: list[tuple[str, str, Node, Key]],
    ) -> dict[str, str]:
        out = dict(base_env)
        own = env
        if "environment" in table:
            self.place((*where, "env"), table["environment"], (*key, "environment"))
            own = [*env, *self.environment(table["environment"], (*key, "environment"))]
        for var, value, node, sub in own:
            out.pop(var, None)  # a later one wins, and is placed where it is written
            out[var] = value
            self.place((*where, "env", var), node, sub)
        # process-compose gives every process these, over its own.
        out["PC_PROC_NAME"] = name
        out["PC_REPLICA_NUM"] = "0"
        return out

    def depends_on(
        self, node: Node, key: Key, where: Key, conditions: list[tuple[str, str, Node, Key]]
    ) -> dict[str, str]:
        key = (*key, "depends_on")
        self.place((*where, "depends_on"), node, key)
        if not isinstance(node.value, dict):
            raise self.fail(node, key, f"must be a mapping of process names, got {kind(node)}")
        out: dict[str, str] = {}
        for dep, value in node.value.items():
            sub = (*key, dep)
            condition, cnode, ckey = "process_started", value, sub
            if isinstance(value.value, Scalar) and not value.value.is_null:
                condition = self.string(value, sub)  # the short form: db: process_healthy
            elif not isinstance(value.value, Scalar):
                table = self.mapping(value, sub, _DEPENDENCY)
                if "condition" in table:
                    cnode, ckey = table["condition"], (*sub, "condition")
                    condition = self.string(cnode, ckey)
            if condition not in CONDITIONS:
                close = difflib.get_close_matches(condition, list(CONDITIONS), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise self.fail(
                    cnode,
                    ckey,
                    f"unknown condition {condition[:60]!r}{hint}: one of {', '.join(CONDITIONS)}",
                )
            conditions.append((dep, condition, cnode, ckey))
            out[dep] = CONDITIONS[condition]
            self.place((*where, "depends_on", dep), cnode, ckey)
        return out

    # -- checks ------------------------------------------------------------------

    def availability(self, node: Node, key: Key, where: Key, data: dict[str, Any]) -> None:
        table = self.mapping(node, key, _AVAILABILITY, _AVAILABILITY_REFUSED)
        restart = "no"
        if "restart" in table:
            sub = (*key, "restart")
            restart = self.string(table["restart"], sub)
            if restart not in RESTARTS:
                close = difflib.get_close_matches(restart, list(RESTARTS), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise self.fail(
                    table["restart"],
                    sub,
                    f"unknown restart policy {restart[:60]!r}{hint}: one of {', '.join(RESTARTS)}",
                )
            for name in ("restart", "exit_on_failure"):
                self.place((*where, name), table["restart"], sub)
        data["restart"], data["exit_on_failure"] = RESTARTS[restart]
        backoff = 1
        if "backoff_seconds" in table:
            sub = (*key, "backoff_seconds")
            backoff = self.integer(table["backoff_seconds"], sub)
            self.place((*where, "backoff"), table["backoff_seconds"], sub)
        else:
            self.place((*where, "backoff"), node, key)
        data["backoff"] = {"initial": backoff, "factor": 1, "cap": max(_LONG_RUN, backoff)}
        if "max_restarts" in table:
            sub = (*key, "max_restarts")
            limit = self.integer(table["max_restarts"], sub)
            self.place((*where, "max_restarts"), table["max_restarts"], sub)
            data["max_restarts"] = limit if limit > 0 else _UNLIMITED
        else:
            data["max_restarts"] = _UNLIMITED
        if "exit_on_end" in table:
            sub = (*key, "exit_on_end")
            data["exit_on_end"] = self.boolean(table["exit_on_end"], sub)
            self.place((*where, "exit_on_end"), table["exit_on_end"], sub)

    def shutdown(self, node: Node, key: Key, where: Key, data: dict[str, Any]) -> None:
        table = self.mapping(node, key, _SHUTDOWN)
        if "command" in table:
            sub = (*key, "command")
            line = self.rendered(table["command"], sub)
            data["stop_command"] = [*self.probe_shell, line]
            self.place((*where, "stop_command"), table["command"], sub)
        if "signal" in table:
            sub = (*key, "signal")
            number = self.integer(table["signal"], sub)
            if number != _SIGTERM:
                data["stop_signal"] = number
                self.place((*where, "stop_signal"), table["signal"], sub)
        if "parent_only" in table and self.boolean(table["parent_only"], (*key, "parent_only")):
            raise self.fail(
                table["parent_only"],
                (*key, "parent_only"),
                "is not read (not supported: a stop signals the command's whole process group)",
            )
        if "timeout_seconds" in table:
            sub = (*key, "timeout_seconds")
            data["graceful_timeout"] = self.integer(table["timeout_seconds"], sub)
            self.place((*where, "graceful_timeout"), table["timeout_seconds"], sub)
