"""Server CPU per MiB of an HTTP/3 bulk download (issue 15 point 2): a rough figure, for the optimisation log.

Starts `peregrine --http3` (one worker, WSGI `tls_apps:wsgi` from tests/apps), downloads `/big?n=SIZE` with
Debian's `gtlsclient` (ngtcp2, in C: the client is not the bottleneck) `--rounds` times on fresh connections, and
prints the worker process's user and system CPU seconds per MiB from /proc (the supervisor does no HTTP/3 work).

    python benchmarks/h3_bulk_cpu.py --bin .build/debug/peregrine --size 33554432 --rounds 4
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trustme

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def worker_pid(supervisor: int) -> int:
    """The supervisor's one child process (waiting for it to start)."""
    for _ in range(100):
        children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise RuntimeError("no worker process")


def free_port() -> int:
    """A UDP port free on 127.0.0.1 just now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    """Run the server, the downloads, and print the figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(ROOT / ".build/debug/peregrine"))
    parser.add_argument("--size", type=int, default=32 << 20)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    client = shutil.which("gtlsclient")
    if client is None:
        raise SystemExit("gtlsclient (Debian ngtcp2-client) is needed")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        leaf = trustme.CA().issue_cert("127.0.0.1")
        cert, key = base / "cert.pem", base / "key.pem"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(key))
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tests/apps")}
        command = [args.bin, "--host", "127.0.0.1", "--port", str(port), "--http3", "--tls-cert", str(cert),
                   "--tls-key", str(key), "--workers", "1", "tls_apps:wsgi"]  # fmt: skip
        server = subprocess.Popen(command, env=env, cwd=ROOT / "tests/apps", stderr=subprocess.PIPE, text=True)
        try:
            for line in server.stderr or []:
                if re.search(r"listening on", line):
                    break
            time.sleep(0.5)
            worker = worker_pid(server.pid)
            before = cpu_seconds(worker)
            started = time.monotonic()
            for _ in range(args.rounds):
                downloads = base / "dl"
                shutil.rmtree(downloads, ignore_errors=True)
                downloads.mkdir()
                url = f"https://127.0.0.1:{port}/big?n={args.size}"
                download = [client, "--exit-on-all-streams-close", "--no-quic-dump", "--no-http-dump", "-q",
                            f"--download={downloads}", "127.0.0.1", str(port), url]  # fmt: skip
                done = subprocess.run(download, check=False, capture_output=True, text=True, timeout=300)
                saved = downloads / f"big?n={args.size}"
                if not saved.exists() or saved.stat().st_size != args.size:
                    raise SystemExit("download failed: " + (done.stdout + done.stderr)[-2000:])
            elapsed = time.monotonic() - started
            after = cpu_seconds(worker)
        finally:
            server.terminate()
            server.wait(10)
    mib = args.size * args.rounds / (1 << 20)
    user, system = after[0] - before[0], after[1] - before[1]
    sys.stdout.write(
        f"{mib:.0f} MiB in {elapsed:.2f} s: worker CPU {1000 * (user + system) / mib:.2f} ms/MiB "
        f"(user {1000 * user / mib:.2f}, system {1000 * system / mib:.2f}), {mib / elapsed:.1f} MiB/s\n"
    )


if __name__ == "__main__":
    main()
