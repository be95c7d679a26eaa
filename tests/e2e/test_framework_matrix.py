"""The framework matrix (issue 22): every application of tests/apps/frameworks over every protocol of
framework_matrix.PROTOCOLS, with the same checks, as a user of that framework would see them.

Each framework is served by one shared server per transport (cleartext, TLS):
HTTP/1.1 and HTTP/2 (h2c by prior knowledge, ALPN h2 over TLS) reach the same
server, and the TLS one serves HTTP/3 on its port over UDP too (aioquic, through
the httpx transport of h3transport.py). The checks (the routes are described in tests/apps/frameworks/__init__.py):

- routing: an integer path parameter and a query parameter (a bad one is the framework's 4xx);
- json: a JSON body in, JSON out;
- form: an urlencoded form;
- upload: a multipart form with a 1.5 MiB file;
- stream: a streamed response whose first chunk reaches the client before the application
  produces the last (the application waits for a file the test creates only then);
- download: 8 MiB in one response;
- static_file: a file served by the framework's own static-files route;
- error_handler: the application's own exception turned into 418 by its handler;
- startup: the framework's own startup hook ran before the first request (not for Falcon's WSGI
  app, which has none);
- request_info: the URL, is-secure and client address the framework reports (https over TLS);
- cookies: a cookie set by one response comes back on the next request;
- websocket: an echo of text and bytes, over HTTP/1.1 (RFC 6455) or HTTP/2 (RFC 8441) as the
  protocol is (not for the WSGI frameworks; not over HTTP/3 yet: the server has no RFC 9220).

With $PEREGRINE_FRAMEWORK_MATRIX set the outcomes go to that JSON file (framework_matrix.py), from
which scripts/framework_matrix.py makes the table in CONFIG.md.

Outside the table, once per framework: its shutdown hook on SIGTERM, what `--root-path` does to
its routing and URL building, and, where a framework rather than the server is at fault, the same
result under uvicorn (Sanic's scheme over TLS; Falcon ASGI's and Sanic's full path under a root path).
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
import pytest

pytest.register_assert_rewrite("framework_matrix", "h2websocket", "h3websocket", "websocket_support")
from framework_matrix import FRAMEWORKS, Case, Framework, cases, serve, uvicorn  # noqa: E402

from conftest import APPS  # noqa: E402

pytest_plugins = ("framework_matrix", "tls_support")

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

STATIC = APPS / "frameworks" / "static" / "notes.txt"
UPLOAD = 3 * 512 * 1024
DOWNLOAD = 8 * 1024 * 1024


@pytest.fixture
def server(case: Case, server_pool: ServerPool, tls_files: TLSFiles) -> Server:
    return serve(server_pool, case, tls_files)


@pytest.fixture
def client(case: Case, server: Server, tls_files: TLSFiles) -> Iterator[httpx.Client]:
    """An httpx client for the case's protocol; every response must have come over that protocol."""

    def same_protocol(response: httpx.Response) -> None:
        assert response.http_version == case.protocol.http_version, (response.http_version, case.id)

    with case.protocol.client(server, tls_files) as http:
        http.event_hooks["response"] = [same_protocol]
        yield http


every_case = pytest.mark.parametrize("case", cases())


@every_case
def test_routing(client: httpx.Client) -> None:
    response = client.get("/items/42", params={"q": "needle haystack"})
    assert response.status_code == 200, response.text
    assert response.json() == {"item_id": 42, "q": "needle haystack"}
    assert client.get("/items/7").json() == {"item_id": 7, "q": None}
    assert 400 <= client.get("/items/not-a-number").status_code < 500
    assert client.get("/nowhere").status_code == 404


@every_case
def test_json(client: httpx.Client) -> None:
    response = client.post("/json", json={"name": "sum", "numbers": [1, 2, 3, 40]})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"name": "sum", "total": 46}


@every_case
def test_form(client: httpx.Client) -> None:
    response = client.post("/form", data={"name": "Ada Lovelace", "colour": "blue & gold"})
    assert response.status_code == 200, response.text
    assert response.json() == {"name": "Ada Lovelace", "colour": "blue & gold"}


@every_case
def test_upload(client: httpx.Client) -> None:
    blob = os.urandom(UPLOAD)
    response = client.post("/upload", data={"note": "a big one"}, files={"blob": ("data.bin", blob)})
    assert response.status_code == 200, response.text
    assert response.json() == {
        "note": "a big one",
        "filename": "data.bin",
        "size": UPLOAD,
        "sha256": hashlib.sha256(blob).hexdigest(),
    }


@every_case
def test_stream(client: httpx.Client, server: Server, case: Case) -> None:
    gate = f"gate-{case.id}-{os.urandom(4).hex()}"
    with client.stream("GET", "/stream", params={"gate": gate}) as response:
        assert response.status_code == 200
        chunks = response.iter_raw()
        received = b""
        while b"\n" not in received:
            received += next(chunks)
        assert received == b"first\n", "the first chunk did not arrive on its own"
        (server.state / gate).touch()
        received += b"".join(chunks)
    assert received == b"first\nreleased\n"


@every_case
def test_download(client: httpx.Client) -> None:
    response = client.get("/download", params={"size": str(DOWNLOAD)})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.content == bytes(range(256)) * (DOWNLOAD // 256)


@every_case
def test_static_file(client: httpx.Client) -> None:
    response = client.get("/static/notes.txt")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.content == STATIC.read_bytes()


@every_case
def test_error_handler(client: httpx.Client) -> None:
    response = client.get("/teapot")
    assert response.status_code == 418
    assert response.json() == {"error": "teapot"}


@pytest.mark.parametrize("case", cases(lambda framework: framework.startup))
def test_startup(client: httpx.Client) -> None:
    response = client.get("/started")
    assert response.status_code == 200, response.text
    assert response.json() == {"started": True}


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if f.shutdown], ids=lambda framework: framework.name)
def test_shutdown_hook_runs_when_the_server_stops(framework: Framework, start_server: Callable[..., Server]) -> None:
    """The framework's own shutdown hook runs on SIGTERM (its own server: the shared ones stop at the session's end)."""
    server = start_server(framework.target, *framework.options)
    with httpx.Client(base_url=server.base_url, timeout=20) as http:
        assert http.get("/started").json() == {"started": True}
    assert "shutdown" not in server.events()
    server.stop()
    assert server.events().count("shutdown") == server.worker_threads


@every_case
def test_request_info(client: httpx.Client, server: Server, case: Case) -> None:
    response = client.get("/whoami", params={"x": "1"})
    assert response.status_code == 200, response.text
    info = response.json()
    # Sanic's ASGI mode says http over TLS too: test_sanic_reports_http_over_tls_under_uvicorn_too.
    secure = case.protocol.transport == "tls" and case.framework.sees_tls
    base = f"{'https' if secure else 'http'}://127.0.0.1:{server.port}"
    assert info["url"] == f"{base}/whoami?x=1"
    assert info["secure"] is secure
    assert info["client"] == "127.0.0.1"
    link = urlsplit(info["link"])
    assert link.path == "/items/7", info["link"]
    assert not link.netloc or f"{link.scheme}://{link.netloc}" == base, info["link"]


@every_case
def test_cookies(client: httpx.Client) -> None:
    response = client.get("/cookies/set")
    assert response.status_code == 200
    assert response.cookies.get("flavour") == "oatmeal"
    assert client.get("/cookies/get").json() == {"flavour": "oatmeal"}


@pytest.mark.parametrize(
    "case", cases(lambda framework: framework.websocket, lambda protocol: protocol.carries_websocket)
)
def test_websocket(case: Case, server: Server, tls_files: TLSFiles) -> None:
    with case.protocol.websocket(server, tls_files, "/ws") as socket:
        socket.send("hello, echo")
        assert socket.receive() == "hello, echo"
        payload = os.urandom(70_000)
        socket.send(payload)
        assert socket.receive() == payload
        socket.send("ünïcödé ✓")
        assert socket.receive() == "ünïcödé ✓"
        socket.close()


def test_sanic_reports_http_over_tls_under_uvicorn_too(tls_files: TLSFiles) -> None:
    """Sanic's ASGI mode, not the server, loses the scheme: under uvicorn with TLS its request.url says http too
    (sanic.models.asgi.MockTransport answers get_extra_info("sslcontext"), ConnInfo asks for "ssl_object")."""
    with uvicorn("frameworks.sanic_app:app", tls=tls_files) as http:
        info = http.get("/whoami", params={"x": "1"}).json()
        assert info["url"] == f"http://127.0.0.1:{http.base_url.port}/whoami?x=1"
        assert info["secure"] is False


#: How each framework takes `--root-path /mount`: whether it routes the full path (`/mount/items/3`, what a
#: proxy that keeps the prefix forwards; the ASGI `path` then includes `root_path`), whether it routes the path
#: without it (`/items/3`, from a proxy that strips the prefix), and the path of the URL it builds for item 7.
ROOT_PATH = {
    "fastapi": (True, True, "/mount/items/7"),
    "starlette": (True, True, "/mount/items/7"),
    "litestar": (True, True, "/mount/items/7"),
    "quart": (True, False, "/mount/items/7"),
    "falcon-asgi": (False, True, "/mount/items/7"),
    "falcon-wsgi": (True, True, "/mount/items/7"),
    "django-asgi": (True, True, "/mount/items/7"),
    "django-wsgi": (True, True, "/mount/items/7"),
    "flask": (True, True, "/mount/items/7"),
    "sanic": (False, True, "/items/7"),
}


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=[framework.name for framework in FRAMEWORKS])
def test_root_path(framework: Framework, server_pool: ServerPool) -> None:
    """What `--root-path` does to each framework's routing and URL building (CONFIG.md's recipes say it too).

    Falcon's ASGI app and Sanic route on the ASGI `path` as it is, without taking `root_path` off it, so the
    full path is not found; uvicorn gives them the same
    (test_full_path_under_root_path_is_not_found_under_uvicorn_either), and
    Sanic leaves `root_path` out of the URLs it builds too."""
    full, stripped, link = ROOT_PATH[framework.name]
    server = server_pool.get(framework.target, "--root-path", "/mount", *framework.options)
    with httpx.Client(base_url=server.base_url, timeout=20) as http:
        assert (http.get("/mount/items/3").status_code == 200) is full
        assert (http.get("/items/3").status_code == 200) is stripped
        info = http.get("/mount/whoami" if full else "/whoami").json()
    assert urlsplit(info["link"]).path == link, info


@pytest.mark.parametrize("target", ["frameworks.falcon_asgi_app:app", "frameworks.sanic_app:app"])
def test_full_path_under_root_path_is_not_found_under_uvicorn_either(target: str) -> None:
    """Under uvicorn --root-path /mount, Falcon's ASGI app and Sanic do not find the full path either (uvicorn puts
    the root path in front of the request's path, which then has it twice)."""
    with uvicorn(target, "--root-path", "/mount") as http:
        assert http.get("/mount/items/3").status_code == 404
