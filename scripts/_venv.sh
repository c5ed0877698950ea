# Sourced by scripts/run, scripts/test and .ci/run; not run on its own.
#
# ensure_venv DIR [EXTRA]: create the virtual environment DIR if it is missing and
# install procwindow into it (editable), with the optional dependencies EXTRA
# ("test" for the tests; none for running the window). pip runs only when
# pyproject.toml is newer than the stamp the last install of that extra left,
# so a second call costs nothing.

PROCWINDOW_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ensure_venv() {
    local venv=$1
    local extra=${2:-}
    local stamp="$venv/.procwindow-installed${extra:+-$extra}"
    local target="$PROCWINDOW_ROOT${extra:+[$extra]}"
    local python="${PYTHON:-python3}"

    if [[ ! -x "$venv/bin/python" ]]; then
        if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "procwindow needs Python 3.11 or newer; set PYTHON to one (tried: $python)" >&2
            return 1
        fi
        echo "==> creating $venv" >&2
        "$python" -m venv "$venv"
        rm -f "$venv"/.procwindow-installed*
    fi
    if [[ ! -f "$stamp" || "$PROCWINDOW_ROOT/pyproject.toml" -nt "$stamp" ]]; then
        echo "==> installing procwindow${extra:+[$extra]} into $venv (once; about a minute)" >&2
        # One line per package fetched, and pip's errors, as it goes (the callers
        # set pipefail, so pip's failure is the pipeline's).
        if ! "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
            -e "$target" 2>&1 \
            | awk '/^(Collecting|Successfully installed|ERROR|error)/ { print; fflush() }' >&2
        then
            echo "installing procwindow into $venv failed;" \
                "see: $venv/bin/python -m pip install -e '$target'" >&2
            return 1
        fi
        touch "$stamp"
    fi
}
