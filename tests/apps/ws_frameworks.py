"""A FastAPI application with WebSocket endpoints and no server-specific code: `peregrine ws_frameworks:app`.

- `/ws/echo`: `iter_text()` echo, prefixing each message with "echo: ";
- `/ws/json`: `receive_json()` / `send_json()` until the client closes;
- `/ws/close`: accepts, sends one message and closes with 4003 "go away";
- `/ws/query/{room}`: path and query parameters and a subprotocol, sent back as JSON;
- `/hello`: a plain HTTP route beside them.
"""

from __future__ import annotations

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import PlainTextResponse

app = FastAPI()
DISCONNECTS: list[int] = []


@app.get("/hello")
async def hello() -> PlainTextResponse:
    """Plain HTTP beside the WebSocket routes."""
    return PlainTextResponse("hello")


@app.get("/disconnects")
async def disconnects() -> list[int]:
    """The codes the /ws/json endpoint saw."""
    return DISCONNECTS


@app.websocket("/ws/echo")
async def echo(websocket: WebSocket) -> None:
    """Echo text until the client closes."""
    await websocket.accept()
    async for text in websocket.iter_text():
        await websocket.send_text("echo: " + text)


@app.websocket("/ws/json")
async def json_echo(websocket: WebSocket) -> None:
    """Echo JSON with a field added; remember the close code."""
    await websocket.accept()
    try:
        while True:
            value = await websocket.receive_json()
            value["seen"] = True
            await websocket.send_json(value)
    except WebSocketDisconnect as exc:
        DISCONNECTS.append(exc.code)


@app.websocket("/ws/close")
async def close(websocket: WebSocket) -> None:
    """Send one message and close with an application code."""
    await websocket.accept()
    await websocket.send_bytes(b"\x00\x01bye")
    await websocket.close(code=4003, reason="go away")


@app.websocket("/ws/query/{room}")
async def query(websocket: WebSocket, room: str, user: str = "anonymous") -> None:
    """Path and query parameters; the first offered subprotocol."""
    offered = websocket.scope["subprotocols"]
    await websocket.accept(subprotocol=offered[0] if offered else None)
    await websocket.send_json({"room": room, "user": user, "subprotocols": offered})
    await websocket.close()
