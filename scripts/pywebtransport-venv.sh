#!/usr/bin/env bash
# Make (or reuse) the venv of pywebtransport, the WebTransport client of the current draft that
# tests/e2e/wtclient_pywebtransport.py drives as a subprocess (tests/e2e/pywebtransport_runner.py).
#
#   scripts/pywebtransport-venv.sh [DIR]
#
# DIR (default $PEREGRINE_PYWT_VENV, else ~/.cache/peregrine/venv-pywebtransport, outside the checkout so
# fresh clones reuse it) gets a venv with tests/requirements-pywebtransport.txt. pywebtransport needs
# CPython >= 3.12 with the GIL (its abi3 wheel does not load into a free-threaded build), newer than the
# test venv's 3.11. The interpreter is the first of: $PYWEBTRANSPORT_BASE_PYTHON; python3.13, python3.12 on
# PATH; pyenv's newest 3.12 or 3.13 ($(pyenv root)/versions/3.1[23].*; the CI machines have pyenv's 3.12.1).
# Without one it fails and says so (the tests that need it then skip with that reason).
# Idempotent: a venv that already imports pywebtransport at the required version is kept.
# Prints the venv's python on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${PEREGRINE_PYWT_VENV:-$HOME/.cache/peregrine/venv-pywebtransport}}
requirements="$root/tests/requirements-pywebtransport.txt"

# CPython >= 3.12 with the GIL (pywebtransport's abi3 wheel does not load into a free-threaded build).
usable() { "$1" -c 'import sys, sysconfig; sys.exit(not (sys.version_info >= (3, 12) and not sysconfig.get_config_var("Py_GIL_DISABLED")))' 2>/dev/null; }

# Reused when it was made from the same requirements file (a copy is kept in the venv).
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$venv/peregrine-requirements.txt" \
        && "$venv/bin/python" -c 'import pywebtransport' 2>/dev/null; then
    echo "$venv/bin/python"
    exit 0
fi

base=
candidates=("${PYWEBTRANSPORT_BASE_PYTHON:-}" "$(command -v python3.13 || true)" "$(command -v python3.12 || true)")
if command -v pyenv >/dev/null 2>&1; then
    pyenv_root=$(pyenv root)
    for dir in $(ls -d "$pyenv_root"/versions/3.1[23].* 2>/dev/null | sort -V -r); do
        candidates+=("$dir/bin/python3")
    done
fi
for candidate in "${candidates[@]}"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && usable "$candidate"; then
        base=$candidate
        break
    fi
done
if [ -z "$base" ]; then
    echo "no CPython >= 3.12 (with the GIL) found for pywebtransport: set PYWEBTRANSPORT_BASE_PYTHON" >&2
    exit 1
fi
[ -x "$venv/bin/python" ] || "$base" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r "$requirements"
cp "$requirements" "$venv/peregrine-requirements.txt"
"$venv/bin/python" -c 'import pywebtransport, sys; print("pywebtransport", pywebtransport.__version__, "on", sys.version.split()[0])' >&2
echo "$venv/bin/python"
