"""A Flask application (pip install flask): `peregrine examples.flask_app:app`."""

from __future__ import annotations

from flask import Flask, Response, request

app = Flask(__name__)


@app.get("/")
def index() -> str:
    return "Hello from Flask on peregrine!\n"


@app.post("/echo")
def echo() -> Response:
    return Response(request.get_data(), mimetype=request.mimetype or "application/octet-stream")
