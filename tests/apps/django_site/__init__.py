"""A minimal Django project served through Django's own handlers: `peregrine django_site.asgi:application`
(ASGI) or `peregrine django_site.wsgi:application` (WSGI)."""
