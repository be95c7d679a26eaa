"""Settings: no database, CSRF protection on (the JSON, form and upload views are exempt), no static files."""

from __future__ import annotations

SECRET_KEY = "peregrine-e2e-not-secret"  # noqa: S105 (a test project)
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "frameworks.django_project.urls"
INSTALLED_APPS = ["frameworks.django_project.apps.ProjectConfig"]
MIDDLEWARE = [
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "frameworks.django_project.views.TeapotMiddleware",
]
DATABASES: dict[str, object] = {}
USE_TZ = True
APPEND_SLASH = False
LOGGING_CONFIG = None
