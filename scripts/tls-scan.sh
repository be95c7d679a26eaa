#!/usr/bin/env bash
# Scan a default TLS server with testssl.sh (Debian package `testssl.sh`), as
# TRANSPORT.md "What a scanner sees" records. Usage:
#   scripts/tls-scan.sh [ecdsa|rsa]        (PEREGRINE_BIN to pick the binary)
# Takes about a minute; not part of CI (tests/e2e/test_tls_scanner_points.py is).
set -euo pipefail
kind=${1:-ecdsa}
bin=${PEREGRINE_BIN:-$(command -v peregrine)}
command -v testssl >/dev/null || { echo "testssl.sh is not installed (apt-get install testssl.sh)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
case $kind in
  ecdsa) key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
  rsa) key=(-newkey rsa:2048) ;;
  *) echo "usage: $0 [ecdsa|rsa]" >&2; exit 2 ;;
esac
openssl req -x509 "${key[@]}" -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 2 -nodes \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
cat > "$dir/scanapp.py" <<'PY'
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"scanned\n"]
PY
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --host 127.0.0.1 --port "$port" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" \
  --app-dir "$dir" scanapp:app 2>"$dir/server.log" &
server=$!
for _ in $(seq 50); do
  curl -sk "https://127.0.0.1:$port/" >/dev/null 2>&1 && break
  sleep 0.2
done
testssl --quiet --color 0 --warnings off -p -s -f -U -S -h "127.0.0.1:$port"
