"""The views, and the middleware that is Django's place for an application's own exception handler."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from .apps import ProjectConfig

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by TeapotMiddleware."""


class TeapotMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, TeapotError):
            return JsonResponse({"error": "teapot"}, status=418)
        return None


def read_item(request: HttpRequest, item_id: int) -> JsonResponse:
    return JsonResponse({"item_id": item_id, "q": request.GET.get("q")})


@csrf_exempt
def total(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    return JsonResponse({"name": body["name"], "total": sum(body["numbers"])})


@csrf_exempt
def form(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"name": request.POST["name"], "colour": request.POST["colour"]})


@csrf_exempt
def upload(request: HttpRequest) -> JsonResponse:
    blob = request.FILES["blob"]
    data = blob.read()
    return JsonResponse(
        {
            "note": request.POST["note"],
            "filename": blob.name,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    )


def sync_chunks(gate: Path) -> Iterator[bytes]:
    yield b"first\n"
    for _ in range(500):
        if gate.exists():
            yield b"released\n"
            return
        time.sleep(0.02)
    yield b"timed out\n"


async def async_chunks(gate: Path) -> AsyncIterator[bytes]:
    yield b"first\n"
    for _ in range(500):
        if gate.exists():
            yield b"released\n"
            return
        await asyncio.sleep(0.02)
    yield b"timed out\n"


def stream(request: HttpRequest) -> StreamingHttpResponse:
    # Django reads a synchronous iterator whole before sending under ASGI, and an asynchronous one whole
    # under WSGI: a project served both ways streams with the kind its handler iterates.
    gate = GATES / request.GET["gate"]
    chunks = async_chunks(gate) if isinstance(request, ASGIRequest) else sync_chunks(gate)
    return StreamingHttpResponse(chunks, content_type="text/plain")


def download(request: HttpRequest) -> HttpResponse:
    size = int(request.GET["size"])
    return HttpResponse(bytes(range(256)) * (size // 256), content_type="application/octet-stream")


def teapot(request: HttpRequest) -> HttpResponse:
    raise TeapotError


def started(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"started": ProjectConfig.started})


def whoami(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {
            "url": request.build_absolute_uri(),
            "secure": request.is_secure(),
            "client": request.META["REMOTE_ADDR"],
            "link": reverse("read_item", args=[7]),
        }
    )


def set_cookie(request: HttpRequest) -> JsonResponse:
    response = JsonResponse({"set": True})
    response.set_cookie("flavour", "oatmeal")
    return response


def get_cookie(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"flavour": request.COOKIES.get("flavour")})
