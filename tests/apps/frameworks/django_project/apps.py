"""The project's app: its `ready()` is Django's own startup hook."""

from __future__ import annotations

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    name = "frameworks.django_project"
    started = False

    def ready(self) -> None:
        ProjectConfig.started = True
