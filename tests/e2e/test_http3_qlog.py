"""qlog traces on request (`--quic-log DIR`): one JSON-SEQ file per QUIC connection (RFC 7464 records: 0x1E, a JSON
object, LF; qlog 0.3's header and event names), written as the connection runs.

- aioquic downloads 1 MiB: the file parses record by record, its header names the connection's original
  Destination Connection ID, and it holds packet_sent / packet_received for every packet type, metrics_updated
  and congestion_state_updated, with times that never go backwards, packet numbers that rise per space, and
  1-RTT packets sent that carry at least the body;
- gtlsclient drops 5 % of what it receives (`--rx-loss`): the server declares packets lost and the trace says
  which (recovery:packet_lost), and the congestion state goes to recovery.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("aioquic")

from h3client import H3Client
from tls_support import TLSFiles, pattern

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

pytest_plugins = ("tls_support",)

GTLSCLIENT = shutil.which("gtlsclient")
ONE_MIB = 1 << 20


def read_trace(
    directory: Path, predicate: Callable[[list[dict[str, Any]]], bool]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The one trace in `directory` (header, events) once `predicate(events)` holds; files are written as events
    happen, so this waits (generously) for the events the test needs rather than for the connection's end."""
    deadline = time.monotonic() + 30.0
    while True:
        files = list(directory.glob("*.sqlog"))
        if len(files) == 1:
            data = files[0].read_bytes()
            # A record is complete when its LF is there (the last one may be half-written).
            records = [json.loads(r) for r in data.split(b"\x1e") if r.endswith(b"\n")]
            if records and predicate(records[1:]):
                assert data.startswith(b"\x1e")
                return records[0], records[1:]
        assert time.monotonic() < deadline, [f.name for f in files]
        time.sleep(0.05)


def names(events: list[dict[str, Any]]) -> set[str]:
    return {e["name"] for e in events}


def test_trace_of_a_download(tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path) -> None:
    logs = tmp_path / "qlog"
    logs.mkdir()
    server = tls_server("tls_apps:asgi", "--http3", "--quic-log", str(logs))
    c = H3Client(port=server.port, ca=tls_files.ca, timeout=60.0)
    response = c.request("GET", f"/big?n={ONE_MIB}")
    assert response.body == pattern(ONE_MIB)

    def body_sent(events: list[dict[str, Any]]) -> bool:
        sent = [
            e for e in events if e["name"] == "transport:packet_sent" and e["data"]["header"]["packet_type"] == "1RTT"
        ]
        return sum(e["data"]["raw"]["length"] for e in sent) >= ONE_MIB

    header, events = read_trace(logs, body_sent)
    assert header["qlog_format"] == "JSON-SEQ"
    assert header["qlog_version"] == "0.3"
    assert header["trace"]["vantage_point"]["type"] == "server"
    odcid = header["trace"]["common_fields"]["ODCID"]
    assert len(odcid) >= 16
    assert next(logs.glob("*.sqlog")).name.startswith(odcid + "-")
    assert {"transport:packet_sent", "transport:packet_received", "recovery:metrics_updated",
            "recovery:congestion_state_updated"} <= names(events)  # fmt: skip
    for name in ("transport:packet_sent", "transport:packet_received"):
        types = {e["data"]["header"]["packet_type"] for e in events if e["name"] == name}
        assert types == {"initial", "handshake", "1RTT"}, (name, types)
    times = [e["time"] for e in events]
    assert times == sorted(times)
    for space in ("initial", "handshake", "1RTT"):
        numbers = [e["data"]["header"]["packet_number"] for e in events
                   if e["name"] == "transport:packet_sent" and e["data"]["header"]["packet_type"] == space]  # fmt: skip
        assert numbers == sorted(set(numbers)), space
    metrics = [e["data"] for e in events if e["name"] == "recovery:metrics_updated"]
    assert all(m["congestion_window"] >= 2400 and m["smoothed_rtt"] > 0 for m in metrics)
    first_state = next(e["data"] for e in events if e["name"] == "recovery:congestion_state_updated")
    assert first_state == {"new": "slow_start"}


@pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
def test_trace_records_losses(tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path) -> None:
    assert GTLSCLIENT is not None
    logs, downloads = tmp_path / "qlog", tmp_path / "dl"
    logs.mkdir()
    downloads.mkdir()
    server = tls_server("tls_apps:asgi", "--http3", "--quic-log", str(logs))
    command = [GTLSCLIENT, "--exit-on-all-streams-close", "-q", f"--download={downloads}", "--rx-loss=0.05",
               "--initial-rtt=20ms", "--handshake-timeout=30s", "127.0.0.1", str(server.port),
               f"https://127.0.0.1:{server.port}/big?n={ONE_MIB}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    saved = downloads / f"big?n={ONE_MIB}"
    assert saved.exists(), (done.stdout + done.stderr)[-2000:]
    assert saved.read_bytes() == pattern(ONE_MIB)

    def lost_and_recovering(events: list[dict[str, Any]]) -> bool:
        states = [e["data"]["new"] for e in events if e["name"] == "recovery:congestion_state_updated"]
        return "recovery:packet_lost" in names(events) and "recovery" in states

    _, events = read_trace(logs, lost_and_recovering)
    sent = {(e["data"]["header"]["packet_type"], e["data"]["header"]["packet_number"])
            for e in events if e["name"] == "transport:packet_sent"}  # fmt: skip
    lost = [(e["data"]["header"]["packet_type"], e["data"]["header"]["packet_number"])
            for e in events if e["name"] == "recovery:packet_lost"]  # fmt: skip
    assert lost
    assert set(lost) <= sent, "only packets that were sent are declared lost"
    assert len(lost) == len(set(lost)), "each loss once"
