"""Interoperability with real HTTP/2 clients (RFC 9113 §3.2, §3.3): curl (--http2-prior-knowledge over
cleartext, --http2 with ALPN over TLS) and nghttp (Debian package nghttp2-client), including several
concurrent streams on one connection and a large response under a small client window."""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
import h2support  # noqa: E402, F401  (puts tests/apps on sys.path)

# isort: split
from h2_apps import pattern  # noqa: E402

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from pathlib import Path

    from h2support import Target


def tool(name: str) -> str:
    """The path of `name`, or skip (curl: Debian curl; nghttp: Debian nghttp2-client)."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (scripts/test.sh installs it)")
    return found


def run(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[bytes]:
    """Run a client; fail with its output if it fails."""
    result = subprocess.run(args, capture_output=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"{' '.join(args)} exited {result.returncode}:\n{result.stderr.decode()[-2000:]}"
    return result


def curl(target: Target, *args: str) -> list[str]:
    """curl speaking HTTP/2 the way the target's transport asks for."""
    mode = ["--http2", "-k"] if target.tls else ["--http2-prior-knowledge"]
    return [tool("curl"), "-sS", "--max-time", "20", *mode, *args]


def nghttp(target: Target, *args: str) -> list[str]:
    """nghttp (prior knowledge for http://, ALPN for https://)."""
    extra = ["-y"] if target.tls else []
    return [tool("nghttp"), *extra, *args]


def test_curl_get(target: Target) -> None:
    """RFC 9113 §3.2/§3.3: curl gets /hello over HTTP/2 (%{http_version} is 2)."""
    result = run(*curl(target, "-w", "\n%{http_version} %{http_code}", target.url("/hello")))
    body, _, info = result.stdout.rpartition(b"\n")
    assert body == b"hello"
    assert info == b"2 200"


def test_curl_post_echo(target: Target, tmp_path: Path) -> None:
    """RFC 9113 §8.1: curl uploads a 300 kB body; the echo comes back identical over HTTP/2."""
    body = pattern(300000)
    source = tmp_path / "body.bin"
    source.write_bytes(body)
    result = run(*curl(target, "--data-binary", f"@{source}", "-w", "%{http_version}", "-o", "-", target.url("/echo")))
    assert result.stdout[: len(body)] == body
    assert result.stdout[len(body) :] == b"2"


def test_curl_large_response(target: Target) -> None:
    """RFC 9113 §6.9: curl downloads a streamed 3 MB body intact."""
    result = run(*curl(target, target.url("/large?size=3000000")))
    assert result.stdout == pattern(3000000)


def test_curl_parallel_streams_on_one_connection(target: Target) -> None:
    """RFC 9113 §5: curl --parallel multiplexes ten requests; all are answered over HTTP/2."""
    urls = [target.url(f"/large?size={10000 + i}") for i in range(10)]
    args = curl(target, "--parallel", "--parallel-immediate", "--parallel-max", "10", "-w", "|%{http_version}|")
    result = run(*args, *[item for url in urls for item in ("-o", "/dev/null", url)])
    assert result.stdout.count(b"|2|") == 10, result.stdout[-300:]


def test_nghttp_get(target: Target) -> None:
    """RFC 9113 §3: nghttp -nv shows the SETTINGS exchange and a 200 response."""
    result = run(*nghttp(target, "-nv", target.url("/hello")))
    out = result.stdout.decode("utf-8", "replace")
    assert "recv SETTINGS frame" in out, out[-2000:]
    assert ":status: 200" in out, out[-2000:]
    assert "recv DATA frame" in out or "END_STREAM" in out, out[-2000:]


def test_nghttp_concurrent_streams(target: Target) -> None:
    """RFC 9113 §5.1.2: nghttp -m 20 sends twenty concurrent requests on one connection; all get 200."""
    result = run(*nghttp(target, "-nv", "-m", "20", target.url("/hello")))
    out = result.stdout.decode("utf-8", "replace")
    assert out.count(":status: 200") == 20, out[-2000:]


def test_nghttp_small_window(target: Target) -> None:
    """RFC 9113 §6.9: nghttp with a 4 KiB stream window (-w 12) and 64 KiB connection window gets a 1 MB body."""
    result = run(*nghttp(target, "-w", "12", "-W", "16", target.url("/large?size=1000000")))
    assert result.stdout == pattern(1000000)


def test_nghttp_post(target: Target, tmp_path: Path) -> None:
    """RFC 9113 §8.1: nghttp -d uploads a file; the echo matches."""
    body = pattern(100000)
    source = tmp_path / "upload.bin"
    source.write_bytes(body)
    result = run(*nghttp(target, "-d", str(source), target.url("/echo")))
    assert result.stdout == body
