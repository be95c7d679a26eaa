"""A FastAPI application with WebTransport routes in front (peregrine.contrib.fastapi): `wt_fastapi_app:app`.

HTTP: GET /items/{item_id} (FastAPI, through the router's pass-through). WebTransport (tests/apps/wt_handlers):
/wt/echo/{room:int} echoes, /wt/close/{code:int}/{reason} closes with that code and reason; any other
WebTransport path is refused with 404.
"""

from __future__ import annotations

from fastapi import FastAPI
from wt_handlers import close_with, echo

from peregrine.contrib.fastapi import WebTransportRouter

app = FastAPI()
webtransport = WebTransportRouter()
webtransport.add_route("/wt/echo/{room:int}", echo)
webtransport.add_route("/wt/close/{code:int}/{reason}", close_with)
app.add_middleware(webtransport.middleware)


@app.get("/items/{item_id}")
async def item(item_id: int) -> dict[str, int]:
    """A plain FastAPI route."""
    return {"item_id": item_id}
