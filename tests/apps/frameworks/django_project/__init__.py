"""A Django project (and its one app) serving the routes of tests/apps/frameworks/__init__.py.

WSGI: `peregrine frameworks.django_project.wsgi:application`; ASGI, with Channels for the WebSocket:
`peregrine frameworks.django_project.asgi:application`. Both set DJANGO_SETTINGS_MODULE themselves, as
`django-admin startproject` writes them.
"""
