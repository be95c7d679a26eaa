"""RFC 7541 (HPACK) as the server decodes it: index address space (§2.3.3), table size (§4.2, §6.3),
integers (§5.1), string literals and Huffman coding (§5.2), indexed and literal representations (§6.1, §6.2).

Every decoding error is a connection error COMPRESSION_ERROR (RFC 9113 §4.3).
The well-formed representations are checked through /headers, which reports
the fields the application was given.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2wire import (  # noqa: E402
    E,
    FrameConn,
    S,
    as_text,
    encode,
    expect_connection_error,
    hp_indexed,
    hp_integer,
    hp_literal,
    hp_raw_string,
    hp_size_update,
    hp_string,
    huffman,
    request_headers,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from h2support import Target

#: The first dynamic table index (RFC 7541 §2.3.3: the static table has 61 entries).
FIRST_DYNAMIC = 62


def base(target: Target, path: str = "/headers") -> bytes:
    """The request pseudo-header fields, encoded without touching the dynamic table."""
    return encode(request_headers(target, path))


def fields_seen(conn: FrameConn, stream_id: int) -> list[list[str]]:
    """The header fields /headers reported for a stream."""
    response = conn.response(stream_id)
    assert response.status == 200, response
    report: list[list[str]] = json.loads(response.body)["headers"]
    return report


def compression_error(target: Target, block: bytes) -> None:
    """Send `block` as a request's field block; expect GOAWAY COMPRESSION_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, block)
        expect_connection_error(conn, E.COMPRESSION_ERROR)


# --- §2.3.3 index address space --------------------------------------------------------------------


def test_indexed_field_beyond_the_tables_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §2.3.3: an index beyond the static and dynamic tables is a decoding error (COMPRESSION_ERROR)."""
    compression_error(target, base(target) + hp_indexed(70))


def test_literal_with_a_name_index_beyond_the_tables_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §2.3.3: the same for the name index of a literal field."""
    compression_error(target, base(target) + hp_literal(70, "value", mode="incremental"))


def test_literal_without_indexing_with_a_name_index_beyond_the_tables_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §2.3.3, §6.2.2: and for a literal without indexing."""
    compression_error(target, base(target) + hp_literal(FIRST_DYNAMIC, "value", mode="without"))


# --- §4.2 / §6.3 table size ------------------------------------------------------------------------


def test_size_update_at_the_end_of_a_block_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §4.2: a dynamic table size update "MUST occur at the beginning of the first header block"."""
    compression_error(target, base(target) + hp_size_update(100))


def test_size_update_after_a_field_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §4.2: nor between two fields."""
    block = encode(request_headers(target, "/headers")[:2]) + hp_size_update(100)
    compression_error(target, block + encode(request_headers(target, "/headers")[2:]))


def test_size_update_over_the_settings_limit_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §6.3: a new maximum size above SETTINGS_HEADER_TABLE_SIZE (4096) is a decoding error."""
    compression_error(target, hp_size_update(4097) + base(target))


def test_size_updates_at_the_start_are_accepted(target: Target) -> None:
    """RFC 7541 §4.2: one or two size updates may begin a block (here 0 then 4096)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hp_size_update(0) + hp_size_update(4096) + base(target))
        fields_seen(conn, 1)


def test_a_smaller_table_evicts_its_entries(target: Target) -> None:
    """RFC 7541 §4.3, §6.3: after a size update to 0 the dynamic table is empty; its old index is invalid."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + hp_literal("x-gone", "soon", mode="incremental"))
        assert ["x-gone", "soon"] in fields_seen(conn, 1)
        conn.headers(3, hp_size_update(0) + hp_size_update(4096) + base(target) + hp_indexed(FIRST_DYNAMIC))
        expect_connection_error(conn, E.COMPRESSION_ERROR)


def test_size_update_larger_than_a_lowered_setting_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §6.3: the limit is the acknowledged setting; with our SETTINGS_HEADER_TABLE_SIZE at its default the
    server's is 4096 — an update to 2^20 is refused (as the update to 4097)."""
    compression_error(target, hp_size_update(1 << 20) + base(target))


# --- §5.1 integers, §5.2 strings -------------------------------------------------------------------


def test_integer_overflow_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §5.1: an integer far beyond any implementation limit is a decoding error."""
    huge = bytes([0xFF]) + b"\xff" * 10 + b"\x7f"
    compression_error(target, base(target) + huge)


def test_string_longer_than_the_block_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §5.2: a string length running past the end of the block is a decoding error."""
    compression_error(target, base(target) + b"\x00" + hp_integer(50, 7) + b"short")


def test_huffman_padding_longer_than_7_bits_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §5.2: "A padding strictly longer than 7 bits MUST be treated as a decoding error"."""
    # "a" is 00011 (5 bits); 11 bits of EOS-prefix padding follow.
    value = hp_raw_string(bytes([0b00011111, 0b11111111]))
    compression_error(target, base(target) + b"\x00" + hp_string("x-huff") + value)


def test_huffman_padding_not_eos_prefix_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §5.2: "A padding not corresponding to the most significant bits of the code for the EOS symbol
    MUST be treated as a decoding error"."""
    value = hp_raw_string(bytes([0b00011000]))
    compression_error(target, base(target) + b"\x00" + hp_string("x-huff") + value)


def test_huffman_string_containing_eos_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §5.2: "A Huffman-encoded string literal containing the EOS symbol MUST be treated as a decoding
    error"."""
    value = hp_raw_string(b"\xff\xff\xff\xff")
    compression_error(target, base(target) + b"\x00" + hp_string("x-huff") + value)


def test_huffman_strings_are_decoded(target: Target) -> None:
    """RFC 7541 §5.2: Huffman-coded names and values are decoded."""
    with FrameConn.open(target) as conn:
        field = hp_literal("x-huffman", "coded value 0123", huffman_coded=True)
        conn.headers(1, base(target) + field)
        assert ["x-huffman", "coded value 0123"] in fields_seen(conn, 1)


def test_huffman_empty_string_is_decoded(target: Target) -> None:
    """RFC 7541 §5.2: a zero-length Huffman string is valid."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + b"\x00" + hp_string("x-empty") + hp_raw_string(b""))
        assert ["x-empty", ""] in fields_seen(conn, 1)


# --- §6.1, §6.2 representations --------------------------------------------------------------------


def test_index_zero_is_a_compression_error(target: Target) -> None:
    """RFC 7541 §6.1: "The index value of 0 is not used. It MUST be treated as a decoding error"."""
    compression_error(target, base(target) + hp_indexed(0))


def test_static_indexed_fields_are_decoded(target: Target) -> None:
    """RFC 7541 §6.1, Appendix A: :method GET (2), :scheme (6/7), :path / (4) as indexed fields."""
    with FrameConn.open(target) as conn:
        scheme = 7 if target.tls else 6
        block = hp_indexed(2) + hp_indexed(scheme) + hp_indexed(4) + hp_literal(1, target.authority)
        conn.headers(1, block)
        response = conn.response(1)
    assert response.status in (200, 404), response


def test_literal_with_incremental_indexing_is_reusable(target: Target) -> None:
    """RFC 7541 §6.2.1: a literal with incremental indexing (new name) enters the dynamic table at index 62."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + hp_literal("x-indexed", "first", mode="incremental"))
        assert ["x-indexed", "first"] in fields_seen(conn, 1)
        conn.headers(3, base(target) + hp_indexed(FIRST_DYNAMIC))
        assert ["x-indexed", "first"] in fields_seen(conn, 3)


def test_literal_with_indexed_name_and_incremental_indexing(target: Target) -> None:
    """RFC 7541 §6.2.1: a literal whose name is a static index (user-agent, 58) is indexed too."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + hp_literal(58, "h2spec-agent", mode="incremental"))
        assert ["user-agent", "h2spec-agent"] in fields_seen(conn, 1)
        conn.headers(3, base(target) + hp_indexed(FIRST_DYNAMIC))
        assert ["user-agent", "h2spec-agent"] in fields_seen(conn, 3)


def test_literal_without_indexing_is_not_added(target: Target) -> None:
    """RFC 7541 §6.2.2: a literal without indexing leaves the dynamic table alone (index 62 stays empty)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + hp_literal("x-plain", "v", mode="without"))
        assert ["x-plain", "v"] in fields_seen(conn, 1)
        conn.headers(3, base(target) + hp_indexed(FIRST_DYNAMIC))
        expect_connection_error(conn, E.COMPRESSION_ERROR)


def test_literal_never_indexed_is_decoded(target: Target) -> None:
    """RFC 7541 §6.2.3: a never-indexed literal is decoded (and not added to the table)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + hp_literal("x-secret", "s3cr3t", mode="never"))
        assert ["x-secret", "s3cr3t"] in fields_seen(conn, 1)


def test_dynamic_table_evicts_the_oldest_entries(target: Target) -> None:
    """RFC 7541 §4.4: adding entries beyond 4096 octets evicts the oldest; the newest keep their indexes."""
    with FrameConn.open(target) as conn:
        # Each entry is 32 + 7 + 1000 octets: the fourth evicts the first.
        entries = [hp_literal(f"x-big-{i}", chr(ord("a") + i) * 1000, mode="incremental") for i in range(4)]
        conn.headers(1, base(target) + b"".join(entries))
        fields_seen(conn, 1)
        # Newest first: 62 = x-big-3, 63 = x-big-2, 64 = x-big-1; x-big-0 (65) was evicted.
        conn.headers(3, base(target) + hp_indexed(62) + hp_indexed(64))
        seen = fields_seen(conn, 3)
        assert ["x-big-3", "d" * 1000] in seen
        assert ["x-big-1", "b" * 1000] in seen
        conn.headers(5, base(target) + hp_indexed(65))
        expect_connection_error(conn, E.COMPRESSION_ERROR)


def test_entry_larger_than_the_table_empties_it(target: Target) -> None:
    """RFC 7541 §4.4: an entry larger than the table is not added and empties the table (no error)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, base(target) + hp_literal("x-small", "1", mode="incremental"))
        fields_seen(conn, 1)
        conn.headers(3, base(target) + hp_literal("x-huge", "h" * 5000, mode="incremental"))
        assert ["x-huge", "h" * 5000] in fields_seen(conn, 3)
        conn.headers(5, base(target) + hp_indexed(FIRST_DYNAMIC))
        expect_connection_error(conn, E.COMPRESSION_ERROR)


def test_server_response_blocks_decode_with_a_zero_table(target: Target) -> None:
    """RFC 7541 §4.2, RFC 9113 §6.5.2: with SETTINGS_HEADER_TABLE_SIZE 0 the server's blocks decode without a
    dynamic table (the decoder refuses any entry)."""
    with FrameConn.open(target, [(S.HEADER_TABLE_SIZE, 0)]) as conn:
        for _ in range(2):
            assert conn.response(conn.request("/hello")).body == b"hello"


def test_huffman_helper_round_trips() -> None:
    """RFC 7541 Appendix B: the suite's own Huffman encoder agrees with the hpack package (sanity check)."""
    import hpack  # noqa: PLC0415

    coded = hp_raw_string(huffman(b"www.example.com"))
    assert coded == bytes.fromhex("8cf1e3c2e5f23a6ba0ab90f4ff")
    decoded = hpack.Decoder().decode(b"\x00" + hp_string("x") + coded)
    assert [(as_text(name), as_text(value)) for name, value in decoded] == [("x", "www.example.com")]
