// RFC 7541 Appendix C examples, https://www.rfc-editor.org/rfc/rfc7541#appendix-C
// (C.1 integers are in IntegerCodingTests). Each request/response is decoded
// and the dynamic table compared with the RFC's listing after it; where the
// RFC shows an encoder's output, our encoder must produce the same bytes.

import XCTest
@testable import HTTP2

final class RFC7541AppendixCTests: XCTestCase {
    // MARK: C.2 header field representations

    // C.2.1 Literal Header Field with Indexing
    func testC21LiteralWithIndexingEntersTheTable() throws {
        var d = HPACKDecoder()
        let wire = hex("""
            400a 6375 7374 6f6d 2d6b 6579 0d63 7573
            746f 6d2d 6865 6164 6572
            """)  // 40: literal, new name; 0a "custom-key"; 0d "custom-header"
        XCTAssertEqual(pairs(try d.decode(wire)), [["custom-key", "custom-header"]])
        XCTAssertEqual(rows(d.table), [["custom-key", "custom-header", "55"]])
        XCTAssertEqual(d.table.size, 55)
        var e = HPACKEncoder(useHuffman: false)
        XCTAssertEqual(e.encode([("custom-key", "custom-header")]), wire)
    }

    // C.2.2 Literal Header Field without Indexing
    func testC22LiteralWithoutIndexingLeavesTheTableEmpty() throws {
        var d = HPACKDecoder()
        let wire = hex("040c 2f73 616d 706c 652f 7061 7468")  // 04: name index 4 (:path); 0c "/sample/path"
        let list = try d.decode(wire)
        XCTAssertEqual(pairs(list), [[":path", "/sample/path"]])
        XCTAssertFalse(list.fields[0].isNeverIndexed)
        XCTAssertEqual(d.table.count, 0)
        var e = HPACKEncoder(useHuffman: false)
        XCTAssertEqual(e.encode([(":path", "/sample/path")], indexing: .withoutIndexing), wire)
    }

    // C.2.3 Literal Header Field Never Indexed
    func testC23NeverIndexedIsMarkedAndNotIndexed() throws {
        var d = HPACKDecoder()
        let wire = hex("1008 7061 7373 776f 7264 0673 6563 7265 74")  // 10: never indexed, new name; "password"; "secret"
        let list = try d.decode(wire)
        XCTAssertEqual(pairs(list), [["password", "secret"]])
        XCTAssertTrue(list.fields[0].isNeverIndexed)
        XCTAssertEqual(d.table.count, 0)
        var e = HPACKEncoder(useHuffman: false)
        XCTAssertEqual(e.encode([("password", "secret")], indexing: .neverIndexed), wire)
        XCTAssertEqual(e.table.count, 0)
    }

    // C.2.4 Indexed Header Field
    func testC24IndexedFieldFromStaticTable() throws {
        var d = HPACKDecoder()
        XCTAssertEqual(pairs(try d.decode([0x82])), [[":method", "GET"]])  // 82: static index 2
        XCTAssertEqual(d.table.count, 0)
        var e = HPACKEncoder()
        XCTAssertEqual(e.encode([(":method", "GET")]), [0x82])
    }

    // MARK: C.3 / C.4 requests

    private let request1 = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]
    private let request2 = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"),
                            ("cache-control", "no-cache")]
    private let request3 = [(":method", "GET"), (":scheme", "https"), (":path", "/index.html"),
                            (":authority", "www.example.com"), ("custom-key", "custom-value")]

    private func runRequests(huffman: Bool, wires: [[UInt8]]) throws {
        var d = HPACKDecoder()
        var e = HPACKEncoder(useHuffman: huffman)
        let expectedTables: [[[String]]] = [
            [[":authority", "www.example.com", "57"]],
            [["cache-control", "no-cache", "53"], [":authority", "www.example.com", "57"]],
            [["custom-key", "custom-value", "54"], ["cache-control", "no-cache", "53"],
             [":authority", "www.example.com", "57"]],
        ]
        let sizes = [57, 110, 164]
        for (i, request) in [request1, request2, request3].enumerated() {
            XCTAssertEqual(e.encode(request), wires[i], "encoder, request \(i + 1)")
            XCTAssertEqual(pairs(try d.decode(wires[i])), request.map { [$0.0, $0.1] }, "request \(i + 1)")
            XCTAssertEqual(rows(d.table), expectedTables[i], "decoder table after request \(i + 1)")
            XCTAssertEqual(d.table.size, sizes[i])
            XCTAssertEqual(rows(e.table), expectedTables[i], "encoder table after request \(i + 1)")
        }
    }

    // C.3 Request Examples without Huffman Coding
    func testC3RequestsWithoutHuffman() throws {
        try runRequests(huffman: false, wires: [
            // 82 GET, 86 http, 84 /, 41 0f :authority "www.example.com" (indexed name 1)
            hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
            // be: dynamic 62 (:authority); 58 08 cache-control "no-cache"
            hex("8286 84be 5808 6e6f 2d63 6163 6865"),
            // 87 https, 85 /index.html, bf dynamic 63; 40 new name custom-key: custom-value
            hex("""
                8287 85bf 400a 6375 7374 6f6d 2d6b 6579
                0c63 7573 746f 6d2d 7661 6c75 65
                """),
        ])
    }

    // C.4 Request Examples with Huffman Coding
    func testC4RequestsWithHuffman() throws {
        try runRequests(huffman: true, wires: [
            hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"),
            hex("8286 84be 5886 a8eb 1064 9cbf"),
            hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
        ])
    }

    // MARK: C.5 / C.6 responses, 256-byte table with eviction

    private let response1 = [(":status", "302"), ("cache-control", "private"),
                             ("date", "Mon, 21 Oct 2013 20:13:21 GMT"), ("location", "https://www.example.com")]
    private let response2 = [(":status", "307"), ("cache-control", "private"),
                             ("date", "Mon, 21 Oct 2013 20:13:21 GMT"), ("location", "https://www.example.com")]
    private let response3 = [(":status", "200"), ("cache-control", "private"),
                             ("date", "Mon, 21 Oct 2013 20:13:22 GMT"), ("location", "https://www.example.com"),
                             ("content-encoding", "gzip"),
                             ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1")]

    private func runResponses(huffman: Bool, wires: [[UInt8]]) throws {
        var d = HPACKDecoder(maxTableSize: 256)
        var e = HPACKEncoder(maxTableSizeLimit: 256, peerMaxTableSize: 256, useHuffman: huffman)
        let expectedTables: [[[String]]] = [
            [["location", "https://www.example.com", "63"], ["date", "Mon, 21 Oct 2013 20:13:21 GMT", "65"],
             ["cache-control", "private", "52"], [":status", "302", "42"]],
            // :status 302 evicted to make room for :status 307
            [[":status", "307", "42"], ["location", "https://www.example.com", "63"],
             ["date", "Mon, 21 Oct 2013 20:13:21 GMT", "65"], ["cache-control", "private", "52"]],
            [["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1", "98"],
             ["content-encoding", "gzip", "52"], ["date", "Mon, 21 Oct 2013 20:13:22 GMT", "65"]],
        ]
        let sizes = [222, 222, 215]
        for (i, response) in [response1, response2, response3].enumerated() {
            XCTAssertEqual(e.encode(response), wires[i], "encoder, response \(i + 1)")
            XCTAssertEqual(pairs(try d.decode(wires[i])), response.map { [$0.0, $0.1] }, "response \(i + 1)")
            XCTAssertEqual(rows(d.table), expectedTables[i], "decoder table after response \(i + 1)")
            XCTAssertEqual(d.table.size, sizes[i])
            XCTAssertEqual(rows(e.table), expectedTables[i], "encoder table after response \(i + 1)")
        }
    }

    // C.5 Response Examples without Huffman Coding
    func testC5ResponsesWithoutHuffmanEvictWithA256ByteTable() throws {
        try runResponses(huffman: false, wires: [
            hex("""
                4803 3330 3258 0770 7269 7661 7465 611d
                4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                2032 303a 3133 3a32 3120 474d 546e 1768
                7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                6c65 2e63 6f6d
                """),
            hex("4803 3330 37c1 c0bf"),  // 48: name :status (static 8) "307"; c1 c0 bf: dynamic 65, 64, 63
            hex("""
                88c1 611d 4d6f 6e2c 2032 3120 4f63 7420
                3230 3133 2032 303a 3133 3a32 3220 474d
                54c0 5a04 677a 6970 7738 666f 6f3d 4153
                444a 4b48 514b 425a 584f 5157 454f 5049
                5541 5851 5745 4f49 553b 206d 6178 2d61
                6765 3d33 3630 303b 2076 6572 7369 6f6e
                3d31
                """),
        ])
    }

    // C.6 Response Examples with Huffman Coding
    func testC6ResponsesWithHuffmanEvictWithA256ByteTable() throws {
        try runResponses(huffman: true, wires: [
            hex("""
                4882 6402 5885 aec3 771a 4b61 96d0 7abe
                9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8
                e9ae 82ae 43d3
                """),
            hex("4883 640e ffc1 c0bf"),
            hex("""
                88c1 6196 d07a be94 1054 d444 a820 0595
                040b 8166 e084 a62d 1bff c05a 839b d9ab
                77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b
                3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                9587 3160 65c0 03ed 4ee5 b106 3d50 07
                """),
        ])
    }
}
