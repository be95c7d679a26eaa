"""Runs in the pywebtransport venv (Python >= 3.12), driven by wtclient_pywebtransport.py over JSON.

pywebtransport (a Rust extension, no aioquic) speaks the current WebTransport
draft (draft-ietf-webtrans-http3: SETTINGS_WT_ENABLED, the `webtransport-h3`
upgrade token, the WT capsules) and needs a newer Python than the test venv, so
it runs in its own venv as a subprocess. One JSON object on stdin:

- {"mode": "client", "url": "https://127.0.0.1:PORT/path", "spec": {...}, "timeout": s}: run the echo
  scenario of wtclient_aioquic.echo_scenario and print its result as one JSON line;
- {"mode": "server", "certfile": ..., "keyfile": ...}: serve an echo server on 127.0.0.1 (paths `/echo` and
  `/close?code=C&reason=R`, as wtserver_aioquic), print {"port": P} and then one JSON line per session
  close it sees ({"closed": {"code", "reason"}}), until stdin closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pywebtransport import (
    ClientConfig,
    ServerConfig,
    WebTransportClient,
    WebTransportServer,
    WebTransportSession,
)
from pywebtransport.types import EventType


def emit(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def client(url: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    config = ClientConfig(verify_mode=ssl.CERT_NONE, max_idle_timeout=timeout)
    result: dict[str, Any] = {"status": 0, "bidi": [], "uni": [], "datagrams": [], "closed": None}
    closed: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    async with WebTransportClient(config=config) as wt:
        try:
            session = await wt.connect(url=url, timeout=timeout)
        except Exception as error:  # noqa: BLE001 - a refusal is a result, reported with its text
            result["error"] = f"{type(error).__name__}: {error}"
            return result

        async def on_closed(event: Any) -> None:  # noqa: ANN401 (pywebtransport's Event)
            data = event.data or {}
            if not closed.done():
                closed.set_result({"code": data.get("error_code") or 0, "reason": data.get("reason") or ""})

        session.events.on(event_type=EventType.SESSION_CLOSED, handler=on_closed)
        result["status"] = 200
        for text in spec.get("bidi", []):
            stream = await session.create_bidirectional_stream()
            await stream.write_all(data=text.encode(), end_stream=True)
            result["bidi"].append((await stream.read_all()).decode())
        for text in spec.get("uni", []):
            send = await session.create_unidirectional_stream()
            await send.write_all(data=text.encode(), end_stream=True)
        if spec.get("uni"):
            incoming = session.incoming_unidirectional_streams()
            for _ in spec["uni"]:
                reply = await anext(incoming)
                result["uni"].append((await reply.read_all()).decode())
        for text in spec.get("datagrams", []):
            for _attempt in range(20):  # datagrams may be lost (RFC 9221 §5): resend until the echo arrives
                await session.send_datagram(data=text.encode())
                with contextlib.suppress(TimeoutError):
                    result["datagrams"].append((await asyncio.wait_for(session.read_datagram(), 0.5)).decode())
                    break
        close = spec.get("close")
        if close is not None:
            await session.close(error_code=int(close.get("code", 0)), reason=str(close.get("reason", "")))
            result["closed"] = {"code": int(close.get("code", 0)), "reason": str(close.get("reason", ""))}
        elif spec.get("await_close"):
            result["closed"] = await asyncio.wait_for(closed, timeout)
    return result


async def echo_session(session: WebTransportSession) -> None:
    target = urlsplit(session.path)
    if target.path not in ("/echo", "/close"):
        await session.reject(status_code=404)
        return
    await session.accept()
    if target.path == "/close":
        query = parse_qs(target.query)
        await session.close(error_code=int(query.get("code", ["0"])[0]), reason=query.get("reason", [""])[0])
        return

    async def on_closed(event: Any) -> None:  # noqa: ANN401 (pywebtransport's Event)
        data = event.data or {}
        emit({"closed": {"code": data.get("error_code") or 0, "reason": data.get("reason") or ""}})

    session.events.on(event_type=EventType.SESSION_CLOSED, handler=on_closed)

    async def bidi() -> None:
        async for stream in session.incoming_bidirectional_streams():
            await stream.write_all(data=await stream.read_all(), end_stream=True)

    async def uni() -> None:
        async for stream in session.incoming_unidirectional_streams():
            data = await stream.read_all()
            reply = await session.create_unidirectional_stream()
            await reply.write_all(data=data, end_stream=True)

    async def datagrams() -> None:
        while not session.is_closed:
            await session.send_datagram(data=await session.read_datagram())

    tasks = [asyncio.create_task(job()) for job in (bidi, uni, datagrams)]
    await asyncio.gather(*tasks, return_exceptions=True)


def free_udp_port() -> int:
    # pywebtransport refuses bind_port 0: take an ephemeral port from the kernel and hand it over.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def server(certfile: str, keyfile: str) -> None:
    config = ServerConfig(certfile=certfile, keyfile=keyfile, bind_host="127.0.0.1", bind_port=free_udp_port())
    async with WebTransportServer(config=config) as wt:
        await wt.listen()
        emit({"port": wt.local_addresses[0][1]})
        tasks: set[asyncio.Task[None]] = set()

        async def sessions_of(connection: Any) -> None:  # noqa: ANN401 (pywebtransport's connection)
            async for session in connection.incoming_sessions():
                task = asyncio.create_task(echo_session(session))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        async def accept() -> None:
            async for connection in wt.incoming_connections():
                task = asyncio.create_task(sessions_of(connection))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        acceptor = asyncio.create_task(accept())
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
        acceptor.cancel()


def main() -> None:
    request = json.loads(sys.stdin.readline())
    if request["mode"] == "client":
        timeout = float(request.get("timeout", 20))
        emit(asyncio.run(asyncio.wait_for(client(request["url"], request["spec"], timeout), timeout)))
    else:
        asyncio.run(server(request["certfile"], request["keyfile"]))


if __name__ == "__main__":
    main()
