"""Request and response bodies shared by the applications and the harness's validation."""

from __future__ import annotations

#: The `hello` response: 13 bytes of text.
HELLO = b"Hello, world!"
#: The `12k` response: 12 KiB (12,288 bytes).
BIG = b"0123456789abcdef" * 768
#: The body POSTed to `echo` (and echoed back): 1 KiB. benchmarks/post.lua sends the same bytes.
ECHO = b"abcdefghijklmnopqrstuvwxyz012345" * 32
#: The FastAPI endpoint's JSON response as FastAPI serialises it.
JSON = b'{"message":"Hello, world!"}'
