"""URL routes of the minimal Django project."""

from __future__ import annotations

from django.urls import path

from django_site import views

urlpatterns = [
    path("hello/<str:name>", views.hello),
    path("echo", views.echo),
    path("protected", views.protected),
    path("stream", views.stream),
    path("async-view", views.async_view),
    path("crash", views.crash),
    path("where", views.where),
    path("where-async", views.where_async),
]
