"""Self-test of the WebTransport client harnesses against wtserver_aioquic's reference draft-02 echo server.

The harnesses (wtclient_aioquic.py here; wt_chromium.py when Chromium is installed) are what the WebTransport
end-to-end tests of peregrine will drive; this checks them against a server that exists without peregrine:
echoed bidirectional streams with FIN, unidirectional streams answered on server streams, datagrams, the
CLOSE_WEBTRANSPORT_SESSION capsule both ways (draft-02 §5) with code and reason, a refused session, and the
draft-02 §4.3 mapping of stream error codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from wt_chromium import CHROMIUM, chromium_echo
from wtclient_aioquic import (
    FIRST_WT_ERROR,
    LAST_WT_ERROR,
    SessionRefusedError,
    WebTransportClient,
    WTSession,
    http3_code_to_webtransport,
    webtransport_code_to_http3,
)
from wtclient_pywebtransport import MISSING, PYWEBTRANSPORT, pywebtransport_echo, pywebtransport_echo_server
from wtserver_aioquic import EchoServerState, echo_server

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tls_support import TLSFiles

pytest_plugins = ("tls_support",)


@pytest.fixture(scope="module")
def reference(tls_files: TLSFiles) -> Iterator[tuple[int, EchoServerState]]:
    with echo_server(tls_files.cert, tls_files.key) as running:
        yield running


def test_error_code_mapping_matches_draft02_section_4_3() -> None:
    # "0x00 corresponds to 0x52e4a40fa8db, and 0xff corresponds to 0x52e4a40fa9e2".
    assert webtransport_code_to_http3(0x00) == FIRST_WT_ERROR
    assert webtransport_code_to_http3(0xFF) == LAST_WT_ERROR
    mapped = [webtransport_code_to_http3(code) for code in range(256)]
    assert len(set(mapped)) == 256
    assert not [h for h in mapped if (h - 0x21) % 0x1F == 0]  # the reserved codepoints are skipped
    assert [http3_code_to_webtransport(h) for h in mapped] == list(range(256))
    assert http3_code_to_webtransport(FIRST_WT_ERROR - 1) is None
    assert http3_code_to_webtransport(LAST_WT_ERROR + 1) is None
    reserved = next(h for h in range(FIRST_WT_ERROR, LAST_WT_ERROR) if (h - 0x21) % 0x1F == 0)
    assert http3_code_to_webtransport(reserved) is None
    with pytest.raises(ValueError, match="8 bits"):
        webtransport_code_to_http3(256)


def test_aioquic_client_echo_scenario(reference: tuple[int, EchoServerState]) -> None:
    port, state = reference
    spec = {
        "bidi": ["one", "two" * 1000],
        "uni": ["u1", "u2"],
        "datagrams": ["d1", "d2"],
        "close": {"code": 9, "reason": "done"},
    }
    result = WebTransportClient(port).echo("/echo", spec)
    assert result["status"] == 200
    assert result["bidi"] == ["one", "two" * 1000]
    assert sorted(result["uni"]) == ["u1", "u2"]
    assert result["datagrams"] == ["d1", "d2"]
    assert result["closed"] == {"code": 0, "reason": ""}  # the server's FIN answering our close
    assert (9, "done") in state.closes
    assert any(fields.get(b"sec-webtransport-http3-draft02") == b"1" for fields in state.headers)


def test_aioquic_client_sees_the_server_close_code_and_reason(reference: tuple[int, EchoServerState]) -> None:
    port, _state = reference
    result = WebTransportClient(port).echo("/close?code=4000&reason=server+bye", {"await_close": True})
    assert result["closed"] == {"code": 4000, "reason": "server bye"}


def test_aioquic_client_reports_a_refused_session(reference: tuple[int, EchoServerState]) -> None:
    port, _state = reference
    assert WebTransportClient(port).echo("/missing", {}) == {"status": 404}

    async def scenario(session: WTSession) -> None:
        raise AssertionError("not reached")

    with pytest.raises(SessionRefusedError) as refused:
        WebTransportClient(port).run("/missing", scenario)
    assert refused.value.status == 404


def test_aioquic_client_reset_carries_a_mapped_code(reference: tuple[int, EchoServerState]) -> None:
    port, state = reference

    async def scenario(session: WTSession) -> None:
        stream = await session.open_stream()
        session.send(stream, b"partial")
        session.reset(stream, 0x42)
        session.send_datagram(b"flush")  # an echo proves the server has read past the reset
        await session.receive_datagram()

    WebTransportClient(port).run("/echo", scenario)
    assert any(code == 0x42 for _stream, code in state.resets)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium (Debian chromium) is not installed")
def test_chromium_harness_echo_scenario(
    reference: tuple[int, EchoServerState], tls_files: TLSFiles, tmp_path: Path
) -> None:
    port, state = reference
    spec = {
        "bidi": ["one", "two" * 1000],
        "uni": ["u1"],
        "datagrams": ["d1"],
        "close": {"code": 7, "reason": "chromium"},
    }
    result = chromium_echo(port, "/echo", spec, tls_files.cert, tmp_path)
    assert result == {
        "status": 200,
        "bidi": ["one", "two" * 1000],
        "uni": ["u1"],
        "datagrams": ["d1"],
        "closed": {"code": 7, "reason": "chromium"},
    }, result
    assert (7, "chromium") in state.closes


@pytest.mark.skipif(CHROMIUM is None, reason="chromium (Debian chromium) is not installed")
def test_chromium_harness_sees_the_server_close(
    reference: tuple[int, EchoServerState], tls_files: TLSFiles, tmp_path: Path
) -> None:
    port, _state = reference
    result = chromium_echo(port, "/close?code=4000&reason=server+bye", {"await_close": True}, tls_files.cert, tmp_path)
    assert result["closed"] == {"code": 4000, "reason": "server bye"}, result


@pytest.mark.skipif(PYWEBTRANSPORT is None, reason=MISSING)
def test_pywebtransport_harness_against_pywebtransport_server(tls_files: TLSFiles) -> None:
    with pywebtransport_echo_server(tls_files.cert, tls_files.key) as server:
        spec = {
            "bidi": ["one", "two" * 1000],
            "uni": ["u1"],
            "datagrams": ["d1"],
            "close": {"code": 9, "reason": "done"},
        }
        result = pywebtransport_echo(server.port, "/echo", spec)
        assert result == {
            "status": 200,
            "bidi": ["one", "two" * 1000],
            "uni": ["u1"],
            "datagrams": ["d1"],
            "closed": {"code": 9, "reason": "done"},
        }, result
        assert server.wait_close() == {"code": 9, "reason": "done"}
        closed = pywebtransport_echo(server.port, "/close?code=4000&reason=server+bye", {"await_close": True})
        assert closed["closed"] == {"code": 4000, "reason": "server bye"}, closed
        refused = pywebtransport_echo(server.port, "/missing", {})
        assert refused["status"] == 0
        assert "error" in refused
