"""Optional helpers for applications served by peregrine.

Nothing here is imported by the server itself. Each module depends only on the
standard library and, for a framework router, on that framework:

- `peregrine.contrib.webtransport`: `WebTransportSession`, a session object
  over the WebTransport ASGI extension (TRANSPORT.md, "The WebTransport ASGI
  extension");
- `peregrine.contrib.starlette` and `peregrine.contrib.fastapi`: a router that
  puts WebTransport routes (Starlette path syntax) in front of an application;
- `peregrine.contrib.django`: the same with Django URL patterns, composable with
  Channels' `ProtocolTypeRouter`.
"""

from __future__ import annotations
