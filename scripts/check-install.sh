#!/usr/bin/env bash
# Install this source tree into a fresh venv of each given interpreter and run
# the installed server's --version both ways. The quick manual counterpart of
# tests/test_install.py.
#   scripts/check-install.sh                       # python3 on PATH
#   scripts/check-install.sh /usr/bin/python3 ~/.pyenv/versions/3.12.1/bin/python3
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for python in "$@"; do
    venv="$work/venv-$(basename "$python")-$RANDOM"
    echo "== $python ($("$python" -c 'import sys; print(sys.version.split()[0])'))"
    "$python" -m venv "$venv"
    start=$SECONDS
    if ! "$venv/bin/pip" install --disable-pip-version-check -q "$here"; then
        echo "FAIL: pip install with $python"; status=1; continue
    fi
    echo "installed in $((SECONDS - start))s"
    if "$venv/bin/peregrine" --version && "$venv/bin/python" -m peregrine --version; then
        echo "ok: $python"
    else
        echo "FAIL: the installed peregrine does not run under $python"; status=1
    fi
done
exit $status
