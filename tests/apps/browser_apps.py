"""Applications for the browser test (tests/e2e/test_http3_chromium.py): `browser_apps:wsgi` and `browser_apps:asgi`.

- `/`: an HTML page whose script fetches `/big?n=N` (N from the page's own query, `?n=N`), checks every byte
  against tls_apps' pattern, then reports what it found with a request to
  `/report?length=L&ok=0|1&protocol=P` (P: the protocol the browser's Resource Timing names for the
  resource, `h3` over HTTP/3), which the server's access log shows;
- `/report`: an empty 204;
- anything else: tls_apps' routes (`/big` among them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import tls_apps

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>HTTP/3 browser check</title></head>
<body><p id="state">loading</p>
<script>
(async () => {
  const n = Number(new URLSearchParams(location.search).get("n"));
  let length = -1, ok = 0, protocol = "none";
  try {
    const url = new URL(`/big?n=${n}`, location.href).href;
    const bytes = new Uint8Array(await (await fetch(url, {cache: "no-store"})).arrayBuffer());
    length = bytes.length;
    ok = 1;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] !== i % 256) { ok = 0; break; }
    }
    const timing = performance.getEntriesByName(url)[0];
    protocol = timing ? timing.nextHopProtocol : "unknown";
  } catch (error) {
    protocol = "error:" + error;
  }
  document.getElementById("state").textContent = `done ${length} ${ok} ${protocol}`;
  await fetch(`/report?length=${length}&ok=${ok}&protocol=${encodeURIComponent(protocol)}`, {cache: "no-store"});
})();
</script></body></html>
"""


def wsgi(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """The page and the report here, the rest in tls_apps."""
    path = environ.get("PATH_INFO", "")
    if path == "/":
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(PAGE)))])
        return [PAGE]
    if path == "/report":
        start_response("204 No Content", [])
        return []
    return tls_apps.wsgi(environ, start_response)


async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
    """The page and the report here, the rest (and the lifespan) in tls_apps."""
    if scope["type"] == "http" and scope["path"] == "/":
        headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(PAGE)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": PAGE})
    elif scope["type"] == "http" and scope["path"] == "/report":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    else:
        await tls_apps.asgi(scope, receive, send)
