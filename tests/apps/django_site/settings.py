"""Settings of the minimal Django project: no database, no installed apps, CSRF protection on."""

from __future__ import annotations

SECRET_KEY = "peregrine-e2e-not-secret"  # noqa: S105 (a test project)
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "django_site.urls"
INSTALLED_APPS: list[str] = []
MIDDLEWARE = [
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]
DATABASES: dict[str, object] = {}
USE_TZ = True
APPEND_SLASH = False
LOGGING_CONFIG = None
