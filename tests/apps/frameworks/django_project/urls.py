"""URLs of the project."""

from __future__ import annotations

from pathlib import Path

from django.urls import path, re_path
from django.views.static import serve

from . import views

urlpatterns = [
    path("items/<int:item_id>", views.read_item, name="read_item"),
    path("json", views.total),
    path("form", views.form),
    path("upload", views.upload),
    path("stream", views.stream),
    path("download", views.download),
    path("teapot", views.teapot),
    path("started", views.started),
    path("whoami", views.whoami),
    path("cookies/set", views.set_cookie),
    path("cookies/get", views.get_cookie),
    # Django serves static files itself only through this development view; a deployment puts them behind
    # the proxy (or WhiteNoise) after `collectstatic`.
    re_path(r"^static/(?P<path>.*)$", serve, {"document_root": Path(__file__).parent.parent / "static"}),
]
