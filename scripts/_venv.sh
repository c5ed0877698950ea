# Sourced by scripts/run, scripts/test and .ci/run; not run on its own.
#
# ensure_venv DIR: create the virtual environment DIR if it is missing and install
# procwindow into it (editable, with the test extra). pip runs only when
# pyproject.toml is newer than the stamp that the last install left, so a second
# call costs nothing.

PROCWINDOW_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ensure_venv() {
    local venv=$1
    local stamp="$venv/.procwindow-installed"
    local python="${PYTHON:-python3}"

    if [[ ! -x "$venv/bin/python" ]]; then
        if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "procwindow needs Python 3.11 or newer; set PYTHON to one (tried: $python)" >&2
            return 1
        fi
        echo "==> creating $venv" >&2
        "$python" -m venv "$venv"
        rm -f "$stamp"
    fi
    if [[ ! -f "$stamp" || "$PROCWINDOW_ROOT/pyproject.toml" -nt "$stamp" ]]; then
        echo "==> installing procwindow[test] into $venv" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            -e "$PROCWINDOW_ROOT[test]"
        touch "$stamp"
    fi
}
