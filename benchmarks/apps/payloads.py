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
#: The `bulk` response of the HTTP/3 bulk-download mode: 32 MiB, sent in 1 MiB chunks. Built only by
#: `bulk_chunks()` (apps/bulk_apps.py imports it), so that no other app's server holds 32 MiB it never sends.
BULK_SIZE = 32 << 20
BULK_CHUNK = 1 << 20


def bulk_chunks() -> list[bytes]:
    """The `bulk` body as BULK_SIZE // BULK_CHUNK chunks of BULK_CHUNK bytes (every chunk different)."""
    pattern = bytes(range(256)) * (BULK_CHUNK // 256)
    return [index.to_bytes(4, "big") + pattern[4:] for index in range(BULK_SIZE // BULK_CHUNK)]
