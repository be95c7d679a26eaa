"""Views of the minimal Django project: sync and async, a CSRF-exempt POST, a streamed response."""

from __future__ import annotations

import asyncio
import hashlib
import sys
import threading
from typing import TYPE_CHECKING

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from thread_kind import thread_kind

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from django.http import HttpRequest


def hello(request: HttpRequest, name: str) -> JsonResponse:
    """A sync view (Django runs it in a thread): path and query parameters, request headers."""
    return JsonResponse(
        {
            "name": name,
            "q": request.GET.getlist("q"),
            "method": request.method,
            "agent": request.headers.get("User-Agent"),
            "script_name": request.META.get("SCRIPT_NAME"),
            "path": request.path,
            "thread": thread_kind(),
        }
    )


@csrf_exempt
def echo(request: HttpRequest) -> JsonResponse:
    """A CSRF-exempt POST: the body's size and digest, and a form field if any."""
    body = request.body
    return JsonResponse(
        {
            "size": len(body),
            "sha256": hashlib.sha256(body).hexdigest(),
            "content_type": request.content_type,
            "field": request.POST.get("field") if request.content_type == "application/x-www-form-urlencoded" else None,
        }
    )


def protected(request: HttpRequest) -> HttpResponse:
    """A POST that CSRF protection guards (no token is sent in the tests: 403)."""
    return HttpResponse("should be refused", content_type="text/plain")


async def stream(request: HttpRequest) -> StreamingHttpResponse:
    """A StreamingHttpResponse from an async iterator."""
    count = int(request.GET.get("count", "10"))

    async def lines() -> AsyncIterator[bytes]:
        for index in range(count):
            yield f"django line {index}\n".encode()
            await asyncio.sleep(0)

    return StreamingHttpResponse(lines(), content_type="text/plain")


async def async_view(request: HttpRequest) -> JsonResponse:
    """An async view runs on the event loop's thread: the server's (`main`, or `server` for another worker thread)."""
    await asyncio.sleep(0)
    return JsonResponse({"thread": thread_kind()})


def crash(request: HttpRequest) -> HttpResponse:
    """An unhandled exception: Django answers 500 itself."""
    raise RuntimeError("django view crashed")


def _where() -> dict[str, object]:
    return {
        "thread": threading.get_ident(),
        "kind": thread_kind(),
        "gil": getattr(sys, "_is_gil_enabled", lambda: True)(),
    }


def where(request: HttpRequest) -> JsonResponse:
    """The serving thread and whether the GIL is on, from a sync view (under WSGI: the worker thread itself)."""
    return JsonResponse(_where())


async def where_async(request: HttpRequest) -> JsonResponse:
    """The same from an async view (under ASGI: the thread running the worker's event loop)."""
    return JsonResponse(_where())
