#!/usr/bin/env bash
# Autobahn|Testsuite fuzzingclient against peregrine serving tests/apps/ws_apps.py's echo.
#
#   tests/autobahn/run.sh            cases 1-7 and 10 (about 250 cases, ~30 s)
#   CASES='1.* 9.*' tests/autobahn/run.sh   other case groups (9 = performance, slow)
#   CASES='12.* 13.*' tests/autobahn/run.sh permessage-deflate (the server gets --ws-compress)
#
# Environment: PEREGRINE_BIN (default: .build/debug/peregrine, then `peregrine`
# on PATH); PYTHON27 (default: pyenv's 2.7.18); AUTOBAHN_VENV (default:
# tests/autobahn/.venv27, made on first use from PyPI: virtualenv<20.22 in a
# Python 3 venv, then pip<21 and autobahntestsuite in a Python 2.7 virtualenv);
# PEREGRINE_ARGS (extra server options; --ws-compress is added when cases 12
# or 13 are asked for).
# Prints OK / NON-STRICT / INFORMATIONAL / UNIMPLEMENTED / FAILED counts and
# every FAILED case; exits 1 if any case FAILED.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${AUTOBAHN_VENV:-$here/.venv27}
python27=${PYTHON27:-/root/.pyenv/versions/2.7.18/bin/python2.7}
cases=${CASES:-1.* 2.* 3.* 4.* 5.* 6.* 7.* 10.*}
server_args=${PEREGRINE_ARGS:-}
case " $cases" in *" 12."* | *" 13."*) server_args="$server_args --ws-compress" ;; esac
bin=${PEREGRINE_BIN:-}
if [ -z "$bin" ]; then
    if [ -x "$root/.build/debug/peregrine" ]; then bin=$root/.build/debug/peregrine; else bin=$(command -v peregrine); fi
fi

if [ ! -x "$venv/bin/wstest" ]; then
    echo "==> making the Python 2.7 virtualenv for autobahntestsuite in $venv"
    python3 -m venv "$venv.bootstrap"
    "$venv.bootstrap/bin/pip" install -q 'virtualenv<20.22'
    "$venv.bootstrap/bin/virtualenv" -q -p "$python27" "$venv"
    "$venv/bin/pip" install -q 'pip<21' 2>/dev/null
    "$venv/bin/pip" install -q autobahntestsuite 2>/dev/null
    # Optional C speed-ups for the client's masking and UTF-8 checks (cases 9, 12, 13 are long without).
    "$venv/bin/pip" install -q wsaccel 2>/dev/null || echo "(wsaccel did not install; the run is slower)"
fi

work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --python-path "$root/tests/apps" --host 127.0.0.1 --port "$port" --log-level warning $server_args ws_apps:app \
    >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null && break
    sleep 0.1
done

python3 - "$work/spec.json" "$port" "$work/reports" $cases <<'PY'
import json, sys
path, port, outdir, *cases = sys.argv[1:]
json.dump({"outdir": outdir, "servers": [{"agent": "peregrine", "url": f"ws://127.0.0.1:{port}/echo"}],
           "cases": cases, "exclude-cases": [], "exclude-agent-cases": {}}, open(path, "w"), indent=2)
PY

echo "==> wstest -m fuzzingclient, cases: $cases"
(cd "$work" && "$venv/bin/wstest" -m fuzzingclient -s "$work/spec.json") >"$work/wstest.log" 2>&1 || {
    tail -n 30 "$work/wstest.log"; echo "wstest failed" >&2; exit 2; }
kill -0 "$server_pid" 2>/dev/null || { echo "peregrine died during the run:" >&2; tail -n 40 "$work/server.err" >&2; exit 2; }
mkdir -p "$here/reports" && rm -rf "$here/reports/servers" && cp -r "$work/reports" "$here/reports/servers"

python3 - "$work/reports/index.json" "$work/reports" <<'PY'
import collections, json, os, sys
index = json.load(open(sys.argv[1]))["peregrine"]
counts = collections.Counter(result["behavior"] for result in index.values())
def key(case):
    return [int(part) for part in case.split(".")]
print("OK %d  NON-STRICT %d  INFORMATIONAL %d  UNIMPLEMENTED %d  FAILED %d  (of %d cases)" % (
    counts["OK"], counts["NON-STRICT"], counts["INFORMATIONAL"], counts["UNIMPLEMENTED"], counts["FAILED"], len(index)))
for case in sorted(index, key=key):
    result = index[case]
    if result["behavior"] in ("FAILED", "NON-STRICT") or result["behaviorClose"] == "FAILED":
        detail = json.load(open(os.path.join(sys.argv[2], result["reportfile"])))
        print("%-10s %-8s close=%-12s %s" % (result["behavior"], case, result["behaviorClose"], detail["description"]))
        print("           expected %s; got %s" % (detail.get("expectation", ""), detail.get("result", "")))
sys.exit(1 if counts["FAILED"] else 0)
PY
