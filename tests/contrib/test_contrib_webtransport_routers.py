"""The WebTransport routers of peregrine.contrib (Starlette, FastAPI, Django) against a fake server.

A matched `webtransport` scope runs its handler with converted path parameters;
an unmatched one is refused with 404; every other scope type reaches the wrapped
application untouched; a handler that returns with the session open has it closed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from fakeasgi import FakePeer, run, webtransport_scope

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from peregrine.contrib.webtransport import WebTransportSession

    App = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]

pytest.importorskip("starlette")
pytest.importorskip("fastapi")
django = pytest.importorskip("django")

from django.conf import settings  # noqa: E402

if not settings.configured:
    settings.configure(SECRET_KEY="peregrine-unit-not-secret", ROOT_URLCONF=[], ALLOWED_HOSTS=["*"])  # noqa: S106
    django.setup()

from django.urls import include, path, re_path  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from peregrine.contrib import django as wt_django  # noqa: E402
from peregrine.contrib import fastapi as wt_fastapi  # noqa: E402
from peregrine.contrib import starlette as wt_starlette  # noqa: E402


async def http_get(app: App, target: str) -> tuple[int, bytes]:
    """One HTTP request through the ASGI app in memory: (status, body)."""
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": target, "raw_path": target.encode(), "query_string": b"", "root_path": "", "headers": [],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }  # fmt: skip
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return int(start["status"]), body


async def serve_session(app: App, target: str, peer: FakePeer, **scope: object) -> asyncio.Future[None]:
    peer.push("connect")
    return asyncio.ensure_future(app(webtransport_scope(target, **scope), peer.receive, peer.send))


def hello(_request: object) -> PlainTextResponse:
    return PlainTextResponse("hello over http")


# -- Starlette ------------------------------------------------------------------------------------


def starlette_router() -> tuple[wt_starlette.WebTransportRouter, list[tuple[str, Any]]]:
    calls: list[tuple[str, Any]] = []
    router = wt_starlette.WebTransportRouter(Starlette(routes=[Route("/hello", hello)]))

    @router.route("/rooms/{room:int}")
    async def room(session: WebTransportSession) -> None:
        calls.append(("room", session.path_params))
        await session.accept()
        stream = await session.accept_stream()
        await stream.send(await stream.read_all(), end=True)

    @router.route("/files/{rest:path}")
    async def files(session: WebTransportSession) -> None:
        calls.append(("files", session.path_params))
        await session.reject(403)

    return router, calls


def test_starlette_router_passes_http_to_the_application() -> None:
    router, calls = starlette_router()
    assert run(http_get(router, "/hello")) == (200, b"hello over http")
    assert run(http_get(router, "/rooms/1"))[0] == 404  # Starlette's own 404 for http
    assert calls == []


def test_starlette_router_runs_the_matching_handler_with_converted_parameters() -> None:
    async def scenario() -> None:
        router, calls = starlette_router()
        peer = FakePeer()
        serving = await serve_session(router, "/rooms/42", peer)
        assert (await peer.sent())["type"] == "webtransport.accept"
        peer.push_data(0, b"echo me", end=True)
        assert (await peer.sent()) == {"type": "webtransport.stream.send", "stream": 0, "data": b"echo me", "end": True}
        # The handler returned with the session open: the router closes it and waits for the disconnect.
        assert (await peer.sent()) == {"type": "webtransport.close", "code": 0, "reason": ""}
        peer.push("disconnect", code=0, reason="")
        await serving
        assert calls == [("room", {"room": 42})]

    run(scenario())


def test_starlette_router_uses_the_first_match_and_path_converters() -> None:
    async def scenario() -> None:
        router, calls = starlette_router()
        peer = FakePeer()
        await (await serve_session(router, "/files/a/b.txt", peer))
        assert (await peer.sent()) == {"type": "webtransport.reject", "status": 403, "headers": []}
        assert calls == [("files", {"rest": "a/b.txt"})]

    run(scenario())


@pytest.mark.parametrize("target", ["/rooms/abc", "/rooms/", "/nowhere", "/hello"])
def test_starlette_router_refuses_an_unmatched_session_with_404(target: str) -> None:
    async def scenario() -> None:
        router, calls = starlette_router()
        peer = FakePeer()
        await (await serve_session(router, target, peer))
        assert (await peer.sent()) == {"type": "webtransport.reject", "status": 404, "headers": []}
        assert calls == []

    run(scenario())


def test_starlette_router_matches_below_the_root_path() -> None:
    async def scenario() -> None:
        router, calls = starlette_router()
        peer = FakePeer()
        await (await serve_session(router, "/mount/files/x", peer, root_path="/mount"))
        assert calls == [("files", {"rest": "x"})]

    run(scenario())


def test_starlette_router_as_middleware_of_a_starlette_app() -> None:
    async def scenario() -> None:
        seen: list[str] = []

        async def handler(session: WebTransportSession) -> None:
            seen.append(session.path)
            await session.reject(409)

        app = Starlette(routes=[Route("/hello", hello)])
        app.add_middleware(wt_starlette.WebTransportRouter, routes=[wt_starlette.WebTransportRoute("/wt", handler)])
        assert await http_get(app, "/hello") == (200, b"hello over http")
        peer = FakePeer()
        await (await serve_session(app, "/wt", peer))
        assert (await peer.sent())["status"] == 409
        assert seen == ["/wt"]

    run(scenario())


def test_starlette_router_without_an_app_refuses_other_scope_types() -> None:
    router = wt_starlette.WebTransportRouter()
    with pytest.raises(ValueError, match="only webtransport"):
        run(http_get(router, "/"))


def test_starlette_route_paths_start_with_a_slash() -> None:
    async def handler(session: WebTransportSession) -> None:
        await session.accept()

    with pytest.raises(ValueError, match="starts with '/'"):
        wt_starlette.WebTransportRoute("wt", handler)


def test_a_handler_exception_before_accept_propagates_to_the_server() -> None:
    async def scenario() -> None:
        async def broken(session: WebTransportSession) -> None:
            raise RuntimeError("handler bug")

        router = wt_starlette.WebTransportRouter(routes=[wt_starlette.WebTransportRoute("/wt", broken)])
        peer = FakePeer()
        with pytest.raises(RuntimeError, match="handler bug"):
            await (await serve_session(router, "/wt", peer))
        assert peer.nothing_sent()  # the server answers 500 for an app that fails before accepting

    run(scenario())


# -- FastAPI --------------------------------------------------------------------------------------


def test_fastapi_router_passes_path_parameters_as_keyword_arguments_and_http_to_fastapi() -> None:
    async def scenario() -> None:
        app = FastAPI()

        @app.get("/items/{item_id}")
        async def item(item_id: int) -> dict[str, int]:
            return {"item": item_id}

        webtransport = wt_fastapi.WebTransportRouter()
        got: list[tuple[int, str]] = []

        @webtransport.webtransport("/game/{level:int}/{name}")
        async def game(session: WebTransportSession, level: int, name: str) -> None:
            got.append((level, name))
            await session.accept()
            async for datagram in session.datagrams():
                await session.send_datagram(datagram.upper())

        app.add_middleware(webtransport.middleware)
        assert await http_get(app, "/items/7") == (200, b'{"item":7}')

        @webtransport.webtransport("/late")  # registered after the middleware stack was built
        async def late(session: WebTransportSession) -> None:
            await session.reject(418)

        peer = FakePeer()
        await (await serve_session(app, "/late", peer))
        assert (await peer.sent())["status"] == 418
        peer = FakePeer()
        serving = await serve_session(app, "/game/3/mario", peer)
        assert (await peer.sent())["type"] == "webtransport.accept"
        peer.push("datagram.receive", data=b"jump")
        assert (await peer.sent()) == {"type": "webtransport.datagram.send", "data": b"JUMP"}
        peer.push("disconnect", code=1, reason="game over")
        await serving
        assert got == [(3, "mario")]
        peer = FakePeer()
        await (await serve_session(app, "/game/x/mario", peer))
        assert (await peer.sent())["status"] == 404

    run(scenario())


# -- Django ---------------------------------------------------------------------------------------


async def django_room(session: WebTransportSession, room: int) -> None:
    await session.accept(subprotocol=session.subprotocols[0])
    await session.send_datagram(f"room {room} {session.path_params}".encode())
    await session.close(0, "bye")


async def django_legacy(session: WebTransportSession, year: str) -> None:
    await session.reject(410, headers=[(b"x-year", year.encode())])


DJANGO_PATTERNS = [
    path("rooms/<int:room>/", django_room),
    re_path(r"^legacy/(?P<year>[0-9]{4})$", django_legacy),
    path("api/", include([path("v1/rooms/<int:room>/", django_room)])),
]


@pytest.mark.parametrize("target", ["/rooms/5/", "/api/v1/rooms/5/"])
def test_django_router_resolves_path_include_and_converters(target: str) -> None:
    async def scenario() -> None:
        router = wt_django.WebTransportRouter(DJANGO_PATTERNS)
        peer = FakePeer()
        serving = await serve_session(router, target, peer)
        assert (await peer.sent()) == {"type": "webtransport.accept", "subprotocol": "chat"}
        assert (await peer.sent()) == {"type": "webtransport.datagram.send", "data": b"room 5 {'room': 5}"}
        assert (await peer.sent()) == {"type": "webtransport.close", "code": 0, "reason": "bye"}
        peer.push("disconnect", code=0, reason="bye")
        await serving

    run(scenario())


def test_django_router_resolves_re_path_groups() -> None:
    async def scenario() -> None:
        router = wt_django.WebTransportRouter(DJANGO_PATTERNS)
        peer = FakePeer()
        await (await serve_session(router, "/legacy/1999", peer))
        assert (await peer.sent()) == {"type": "webtransport.reject", "status": 410, "headers": [[b"x-year", b"1999"]]}

    run(scenario())


@pytest.mark.parametrize("target", ["/rooms/x/", "/rooms/5", "/legacy/99", "/"])
def test_django_router_refuses_an_unmatched_session_with_404(target: str) -> None:
    async def scenario() -> None:
        router = wt_django.WebTransportRouter(DJANGO_PATTERNS)
        peer = FakePeer()
        await (await serve_session(router, target, peer))
        assert (await peer.sent())["status"] == 404

    run(scenario())


def test_django_router_passes_other_scopes_to_its_app_or_refuses_them_without_one() -> None:
    inner = Starlette(routes=[Route("/hello", hello)])  # any ASGI app stands in for get_asgi_application()
    assert run(http_get(wt_django.WebTransportRouter(DJANGO_PATTERNS, app=inner), "/hello")) == (
        200,
        b"hello over http",
    )
    with pytest.raises(ValueError, match="only webtransport"):
        run(http_get(wt_django.WebTransportRouter(DJANGO_PATTERNS), "/hello"))


def test_django_router_composes_with_channels_protocol_type_router() -> None:
    channels_routing = pytest.importorskip("channels.routing")

    async def scenario() -> None:
        application = channels_routing.ProtocolTypeRouter(
            {
                "http": Starlette(routes=[Route("/hello", hello)]),
                "webtransport": wt_django.WebTransportRouter(DJANGO_PATTERNS),
            }
        )
        assert await http_get(application, "/hello") == (200, b"hello over http")
        peer = FakePeer()
        await (await serve_session(application, "/legacy/2024", peer))
        assert (await peer.sent())["status"] == 410

    run(scenario())
