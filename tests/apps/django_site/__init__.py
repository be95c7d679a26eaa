"""A minimal Django project served through Django's own ASGI handler: `peregrine django_site.asgi:application`."""
