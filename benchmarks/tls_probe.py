"""A TLS server that counts full and resumed handshakes, for the harness's check of its handshake client.

Usage: python3 benchmarks/tls_probe.py CERT KEY PORT

It answers every HTTP/1.1 request with a 13-byte `Connection: close` response, issues TLS 1.3 session tickets
and keeps a TLS 1.2 session cache (Python's defaults), so it resumes any session a client offers. On SIGTERM it
prints `full=N resumed=M` and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
import sys

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, world!"


async def serve(cert: str, key: str, port: int) -> dict[str, int]:
    """Serve until SIGTERM; the handshake counts."""
    counts = {"full": 0, "resumed": 0}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = writer.get_extra_info("ssl_object")
        counts["resumed" if session is not None and session.session_reused else "full"] += 1
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(RESPONSE)
            await writer.drain()
        writer.close()

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    server = await asyncio.start_server(handle, "127.0.0.1", port, ssl=context)
    async with server:
        await stopped.wait()
    return counts


def main(argv: list[str]) -> int:
    """Run the probe server."""
    counts = asyncio.run(serve(argv[0], argv[1], int(argv[2])))
    sys.stdout.write(f"full={counts['full']} resumed={counts['resumed']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
