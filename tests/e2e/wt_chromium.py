"""A WebTransport client harness on headless Chromium (its QUICHE stack; Chromium 156 negotiates draft-02).

`chromium_echo(port, path, spec, certificate, workdir)` runs the same scenario as
wtclient_aioquic.echo_scenario (JSON in, JSON out) from a page's script with the
browser's `WebTransport` API. Per /work/shared/TOOLS.md: the page is served
over http://127.0.0.1 (a secure context) by a small HTTP server in this
process, which also receives the script's report (a `fetch` POST); Chromium is
told to speak QUIC to the WebTransport origin (`--origin-to-force-quic-on`) and
to accept the test certificate by the SHA-256 of its public key
(`--ignore-certificate-errors-spki-list`); headless Chromium does not exit by
itself, so it runs in its own process group under `timeout`, and is stopped
once the report is in.

Result: {"status": 200 | 0 (refused: the browser does not expose the status), "error": str (on a
refusal or failure), "bidi", "uni", "datagrams", "closed": {"code", "reason"} | None}.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

if TYPE_CHECKING:
    from pathlib import Path

CHROMIUM = shutil.which("chromium")

# The page's script: the echo scenario with the WebTransport API (W3C WebTransport).
PAGE = """<!doctype html><meta charset="utf-8"><title>wt</title><script>
const spec = %(spec)s;
const url = %(url)s;
const enc = new TextEncoder(), dec = new TextDecoder();
async function readAll(readable) {
  const reader = readable.getReader(); const parts = [];
  for (;;) { const {value, done} = await reader.read(); if (done) break; parts.push(value); }
  let size = 0; for (const p of parts) size += p.length;
  const all = new Uint8Array(size); let at = 0; for (const p of parts) { all.set(p, at); at += p.length; }
  return dec.decode(all);
}
async function run() {
  const result = {status: 0, bidi: [], uni: [], datagrams: [], closed: null};
  const wt = new WebTransport(url);
  try { await wt.ready; } catch (e) { result.error = String(e); return result; }
  result.status = 200;
  for (const text of spec.bidi || []) {
    const stream = await wt.createBidirectionalStream();
    const writer = stream.writable.getWriter(); await writer.write(enc.encode(text)); await writer.close();
    result.bidi.push(await readAll(stream.readable));
  }
  for (const text of spec.uni || []) {
    const stream = await wt.createUnidirectionalStream();
    const writer = stream.getWriter(); await writer.write(enc.encode(text)); await writer.close();
  }
  if ((spec.uni || []).length) {
    const incoming = wt.incomingUnidirectionalStreams.getReader();
    for (let i = 0; i < spec.uni.length; i++) {
      const {value} = await incoming.read(); result.uni.push(await readAll(value));
    }
    incoming.releaseLock();
  }
  if ((spec.datagrams || []).length) {
    const writer = wt.datagrams.writable.getWriter(), reader = wt.datagrams.readable.getReader();
    for (const text of spec.datagrams) {
      // Datagrams may be lost (RFC 9221 section 5): resend until the echo arrives.
      for (let attempt = 0; attempt < 20; attempt++) {
        await writer.write(enc.encode(text));
        const got = await Promise.race([reader.read(), new Promise(r => setTimeout(() => r(null), 500))]);
        if (got && got.value) { result.datagrams.push(dec.decode(got.value)); break; }
      }
    }
  }
  if (spec.close) wt.close({closeCode: spec.close.code || 0, reason: spec.close.reason || ""});
  if (spec.close || spec.await_close) {
    const info = await wt.closed.catch(e => ({closeCode: -1, reason: String(e)}));
    result.closed = {code: info.closeCode, reason: info.reason};
  }
  return result;
}
run().catch(e => ({status: -1, error: String(e && e.stack || e)})).then(
  r => fetch("/report", {method: "POST", body: JSON.stringify(r)}));
</script>"""


def spki_sha256(certificate: Path) -> str:
    """The base64 SHA-256 of the leaf's SubjectPublicKeyInfo, as --ignore-certificate-errors-spki-list takes it."""
    leaf = x509.load_pem_x509_certificate(certificate.read_bytes())
    der = leaf.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


class _PageServer(http.server.ThreadingHTTPServer):
    page = b""
    report: dict[str, Any] | None = None
    reported = threading.Event()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _PageServer

    def do_GET(self) -> None:
        body = self.server.page if self.path == "/" else b""
        self.send_response(200 if body else 404)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/report":
            self.server.report = json.loads(data)
            self.server.reported.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002, ANN401 (http.server's signature)
        return


def chromium_echo(
    port: int, path: str, spec: dict[str, Any], certificate: Path, workdir: Path, *, timeout: float = 60.0
) -> dict[str, Any]:
    """Run the echo scenario from headless Chromium against https://127.0.0.1:`port``path`."""
    assert CHROMIUM is not None, "chromium is not installed"
    origin = f"127.0.0.1:{port}"
    pages = _PageServer(("127.0.0.1", 0), _Handler)
    pages.reported = threading.Event()
    pages.page = (PAGE % {"spec": json.dumps(spec), "url": json.dumps(f"https://{origin}{path}")}).encode()
    threading.Thread(target=pages.serve_forever, name="wt-chromium-page", daemon=True).start()
    command = [
        "timeout", str(int(timeout) + 10), CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        "--no-first-run", "--disable-extensions", f"--user-data-dir={workdir / 'profile'}",
        f"--ignore-certificate-errors-spki-list={spki_sha256(certificate)}",
        f"--origin-to-force-quic-on={origin}", f"http://127.0.0.1:{pages.server_address[1]}/",
    ]  # fmt: skip
    log_path = workdir / "chromium.log"
    with log_path.open("wb") as log:
        browser = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        reported = pages.reported.wait(timeout)
    finally:
        os.killpg(browser.pid, signal.SIGTERM)
        try:
            browser.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait(timeout=15)
        pages.shutdown()
        pages.server_close()
    if not reported or pages.report is None:
        raise AssertionError(f"no report from Chromium: {log_path.read_text(errors='replace')[-3000:]}")
    return pages.report
