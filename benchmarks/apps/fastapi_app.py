"""A FastAPI JSON endpoint (served by the ASGI servers only)."""

from __future__ import annotations

from fastapi import FastAPI

app = FastAPI()


@app.get("/")
async def message() -> dict[str, str]:
    """Return a small JSON object; FastAPI sets content-length on its JSONResponse."""
    return {"message": "Hello, world!"}
