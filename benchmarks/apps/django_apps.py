"""A small Django site in one module, for the memory of worker threads against processes (BENCHMARKS.md).

Configured in code (no settings module) with the contrib applications a typical
project installs, one JSON view, and both handlers: `django_apps:wsgi` and
`django_apps:asgi`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import django
from django.conf import settings
from django.http import JsonResponse
from django.urls import path

if TYPE_CHECKING:
    from django.http import HttpRequest

settings.configure(
    DEBUG=False,
    SECRET_KEY="benchmark-only",  # noqa: S106 (a benchmark site, never deployed)
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
        "django.contrib.staticfiles",
    ],
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    ],
    TEMPLATES=[
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "APP_DIRS": True,
            "OPTIONS": {"context_processors": ["django.contrib.auth.context_processors.auth"]},
        }
    ],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    STATIC_URL="static/",
    USE_TZ=True,
)
django.setup()


def message(request: HttpRequest) -> JsonResponse:
    """A small JSON object, as the FastAPI application answers."""
    return JsonResponse({"message": "Hello, world!"})


urlpatterns = [path("", message)]

from django.core.asgi import get_asgi_application  # noqa: E402 (after settings.configure)
from django.core.wsgi import get_wsgi_application  # noqa: E402

wsgi = get_wsgi_application()
asgi = get_asgi_application()
