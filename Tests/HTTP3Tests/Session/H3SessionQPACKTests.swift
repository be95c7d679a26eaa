// QPACK through the session (RFC 9204): the client's encoder stream feeding
// our dynamic table, field sections with dynamic references, blocked streams
// released by inserts, their limits, and what our decoder stream says —
// including RFC 9204 Appendix B replayed over real streams.

import XCTest
import Core
import HTTPFields
@testable import HTTP3

final class H3SessionQPACKTests: XCTestCase {
    let postHead = [":method: POST", ":scheme: https", ":authority: a.example", ":path: /up"]

    /// Our decoder stream after its type byte.
    private func decoderInstructions(_ g: Glue, firstWrite: Bool = false) throws -> [Parse.DecoderInstruction] {
        var bytes = g.output(.qpackDecoder)
        if firstWrite {
            XCTAssertEqual(bytes.first, 0x03)
            bytes.removeFirst()
        }
        return try Parse.decoderInstructions(bytes)
    }

    // §4.5.2, §4.5.3: indexed lines relative to the base and post-base; the
    // decoded request; §4.4.1 Section Acknowledgment and §4.4.3 Insert Count
    // Increment only for inserts the acknowledgment does not cover.
    func testRequestWithDynamicReferences() throws {
        var enc = TestQPACKEncoder()
        var encoderStream = enc.setCapacity(4096)
        encoderStream += enc.insert(":authority", "a.example")
        encoderStream += enc.insert("x-trace", "t-1")
        encoderStream += enc.insert("x-unused", "u")
        let g = Glue()
        _ = (g.output(.control), g.output(.qpackEncoder))
        g.startClient(encoder: encoderStream)
        XCTAssertEqual(g.session.hasPendingOutput, true, "the Insert Count Increment")
        XCTAssertEqual(try decoderInstructions(g, firstWrite: true), [.insertCountIncrement(3)])
        // Base 1: entry 0 below it, entry 1 post-base.
        let section = enc.section(Wire.post() + [("x-trace", "t-1")], base: 1)
        g.deliver(0, Wire.headers(section: section) + Wire.data("hi"), fin: true)
        XCTAssertEqual(g.take(), [.request(0, postHead + ["x-trace: t-1"], end: false), .data(0, "hi", end: true)])
        XCTAssertEqual(try decoderInstructions(g), [.sectionAck(0)])
        XCTAssertFalse(g.session.hasPendingOutput)
    }

    // §2.1.2: a section whose Required Insert Count is above the inserts
    // received blocks its stream — nothing more is read from it — until the
    // encoder stream delivers them; then the request comes, and the glue
    // offers the stream's held bytes again. Fed whole and byte by byte.
    func testBlockedStreamIsReleasedByInserts() throws {
        var enc = TestQPACKEncoder()
        var encoderStream = enc.setCapacity(4096)
        encoderStream += enc.insert("x-session", "s-42")
        let request = Wire.headers(section: enc.section(Wire.post() + [("x-session", "s-42")])) + Wire.data("body")
        let expected: [Ev] = [.request(0, postHead + ["x-session: s-42"], end: false), .data(0, "body", end: true)]
        for size in [Int.max, 1] {
            let g = Glue()
            g.startClient()
            _ = g.output(.qpackDecoder)
            g.deliver(0, request, fin: true, pieceSize: size)
            XCTAssertEqual(g.take(), [], "blocked")
            XCTAssertTrue(g.session.isBlocked(streamID: 0))
            XCTAssertEqual(g.session.openRequestCount, 1)
            g.deliver(6, encoderStream, pieceSize: size)
            XCTAssertEqual(normalized(g.take()), expected, "pieces of \(size)")
            XCTAssertFalse(g.session.isBlocked(streamID: 0))
            XCTAssertEqual(try decoderInstructions(g), [.sectionAck(0)], "the acknowledgment covers the insert")
        }
    }

    /// A blocked head whose stream already ended reports `endStream` when
    /// released; blocked trailers are released the same way.
    func testBlockedHeadWithFinAndBlockedTrailers() {
        var enc = TestQPACKEncoder()
        let capacity = enc.setCapacity(4096)
        let insert1 = enc.insert("x-a", "1")
        let head = Wire.headers(section: enc.section(Wire.post() + [("x-a", "1")]))
        let g = Glue()
        g.startClient(encoder: capacity)
        g.deliver(0, head)
        g.deliver(0, [], fin: true)
        XCTAssertTrue(g.session.isBlocked(streamID: 0))
        g.deliver(6, insert1)
        XCTAssertEqual(g.take(), [.request(0, postHead + ["x-a: 1"], end: true)])

        let insert2 = enc.insert("x-t", "2")
        let t = Glue()
        t.startClient(encoder: capacity + insert1)
        t.deliver(4, Wire.headers(Wire.post()) + Wire.data("b") + Wire.headers(section: enc.section([("x-t", "2")])), fin: true)
        XCTAssertEqual(t.take(), [.request(4, postHead, end: false), .data(4, "b", end: false)])
        XCTAssertTrue(t.session.isBlocked(streamID: 4))
        t.deliver(6, insert2)
        XCTAssertEqual(t.take(), [.trailers(4, ["x-t: 2"])])
        XCTAssertFalse(t.session.isBlocked(streamID: 4))
    }

    /// Regression (fuzz-h3-session): a blocked section is decoded as soon as
    /// the instruction completing its inserts is applied, so an eviction
    /// later in the same encoder-stream read (an encoder breaking RFC 9204
    /// §2.1.1) cannot change the outcome with how the read was split.
    func testReleasedSectionIsDecodedBeforeLaterEvictions() {
        var enc = TestQPACKEncoder()
        let capacity = enc.setCapacity(4096)
        let insert = enc.insert("x-a", "1")
        let section = Wire.headers(section: enc.section(Wire.post() + [("x-a", "1")]))
        let expected: [Ev] = [.request(0, postHead + ["x-a: 1"], end: true)]
        for size in [Int.max, 1] {
            let g = Glue()
            g.startClient(encoder: capacity)
            g.deliver(0, section, fin: true)
            g.deliver(6, insert + enc.setCapacity(0), pieceSize: size)
            XCTAssertEqual(g.take(), expected, "pieces of \(size)")
            XCTAssertEqual(g.session.decoder.table.size, 0, "evicted after the section was decoded")
        }
    }

    /// Several streams released by one encoder-stream read come out one per
    /// call, in the order they blocked.
    func testOneInsertReleasesSeveralStreams() {
        var enc = TestQPACKEncoder()
        let capacity = enc.setCapacity(4096)
        let insert = enc.insert(":path", "/shared")
        let section = enc.section([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/shared")])
        let g = Glue()
        g.startClient(encoder: capacity)
        for id: UInt64 in [8, 0, 4] { g.deliver(id, Wire.headers(section: section), fin: true) }
        XCTAssertEqual(g.take(), [])
        g.deliver(6, insert)
        let head = [":method: GET", ":scheme: https", ":authority: a", ":path: /shared"]
        XCTAssertEqual(g.take(), [.request(8, head, end: true), .request(0, head, end: true), .request(4, head, end: true)])
    }

    /// A whole client connection — control stream, a dynamic-table encoder
    /// stream, three requests (one blocked until a later insert) — delivered
    /// at once per stream, then interleaved across streams a byte at a time:
    /// every stream sees the same events.
    func testWholeConnectionInterleavedByteByByte() {
        var enc = TestQPACKEncoder()
        var encoder: [UInt8] = [0x02] + enc.setCapacity(4096)
        encoder += enc.insert(":authority", "a.example")
        let early = enc.section(Wire.post() + [("content-length", "4")])
        let late = enc.insert("x-late", "yes")
        encoder += late
        let blocked = enc.section(Wire.get + [("x-late", "yes")])
        let streams: [(UInt64, [UInt8])] = [
            (2, Wire.control(H3Settings(qpackMaxTableCapacity: 4096, qpackBlockedStreams: 10)) + Wire.frame(0x0d, [5])),
            (0, Wire.headers(section: early) + Wire.data("ab") + Wire.data("cd") + Wire.headers([("x-sum", "1")])),
            (4, Wire.headers(section: blocked)),
            (6, encoder),
            (8, Wire.headers(Wire.get) + Wire.frame(0x21, [9])),
        ]
        func perStream(_ events: [Ev]) -> [String: [Ev]] {
            var out: [String: [Ev]] = [:]
            for e in events {
                let key: String
                switch e {
                case .request(let id, _, _), .data(let id, _, _), .trailers(let id, _): key = "\(id)"
                default: key = "connection"
                }
                out[key, default: []].append(e)
            }
            return out.mapValues(normalized)
        }
        let whole = Glue()
        for (id, bytes) in streams { whole.deliver(id, bytes, fin: id & 2 == 0) }
        let expected = perStream(whole.take())
        XCTAssertEqual(expected["0"], [.request(0, postHead + ["content-length: 4"], end: false), .data(0, "abcd", end: false),
                                       .trailers(0, ["x-sum: 1"])])
        XCTAssertEqual(expected["4"], [.request(4, [":method: GET", ":scheme: https", ":authority: a.example", ":path: /", "x-late: yes"],
                                                end: true)])
        XCTAssertEqual(expected["8"]?.count, 2)
        let g = Glue()
        let longest = streams.map(\.1.count).max()!
        for at in 0 ..< longest {
            for (id, bytes) in streams where at < bytes.count {
                g.deliver(id, [bytes[at]], fin: id & 2 == 0 && at == bytes.count - 1)
            }
        }
        XCTAssertEqual(perStream(g.take()), expected)
    }

    // §2.1.2: "If a decoder encounters more blocked streams than it promised
    // to support, it MUST treat this as a connection error of type
    // QPACK_DECOMPRESSION_FAILED."
    func testBlockedStreamsLimit() {
        var l = H3Limits()
        l.qpackBlockedStreams = 2
        var enc = TestQPACKEncoder()
        let capacity = enc.setCapacity(4096)
        _ = enc.insert("x-a", "1")
        let section = Wire.headers(section: enc.section(Wire.post() + [("x-a", "1")]))
        let g = Glue(l)
        g.startClient(encoder: capacity)
        g.deliver(0, section)
        g.deliver(4, section)
        XCTAssertEqual(g.take(), [])
        g.deliver(8, section)
        XCTAssertEqual(g.take(), [.error(8, .qpackTooManyBlockedStreams)])
        XCTAssertEqual(H3Error.qpackTooManyBlockedStreams.code, .qpackDecompressionFailed)

        var none = H3Limits()
        none.qpackBlockedStreams = 0
        let z = Glue(none)
        z.startClient(encoder: capacity)
        z.deliver(0, section)
        XCTAssertEqual(z.take(), [.error(0, .qpackTooManyBlockedStreams)], "no blocking allowed at all")
    }

    // RFC 9204 §4.3.1: "The decoder MUST treat a new dynamic table capacity
    // value that exceeds this limit as a connection error of type
    // QPACK_ENCODER_STREAM_ERROR"; with our capacity at 0 any capacity is.
    func testCapacityAboveOurMaximum() {
        let enc = TestQPACKEncoder()
        let g = Glue()
        g.deliver(6, [0x02] + enc.setCapacity(4097))
        XCTAssertEqual(g.take(), [.error(6, .qpackCapacityTooLarge)])
        var l = H3Limits()
        l.qpackMaxTableCapacity = 0
        let z = Glue(l)
        z.deliver(6, [0x02] + enc.setCapacity(1))
        XCTAssertEqual(z.take(), [.error(6, .qpackCapacityTooLarge)])
        XCTAssertEqual(H3Error.qpackCapacityTooLarge.code, .qpackEncoderStreamError)
    }

    // §2.2.3 / §4.5.1.1: a reference outside what the section may use, or a
    // Required Insert Count no conformant encoder produces.
    func testBadSectionReferencesAreDecompressionFailed() {
        var enc = TestQPACKEncoder()
        let stream = [0x02] + enc.setCapacity(4096) + enc.insert("x-a", "1")
        let g = Glue()
        g.deliver(6, stream)
        // RIC 1, Base 1, relative index 1 → absolute -1.
        g.deliver(0, Wire.headers(section: [0x02, 0x00, 0x81]))
        XCTAssertEqual(g.take(), [.error(0, .qpackBadDynamicReference)])
        let h = Glue()
        h.deliver(6, stream)
        h.deliver(0, Wire.headers(section: [0xff, 0x7f]))
        XCTAssertEqual(h.take(), [.error(0, .qpackBadRequiredInsertCount)])
    }

    // §2.2.2.2: a stream reset while its section is blocked is cancelled at
    // the encoder (Stream Cancellation) and never released; a stream we give
    // up before its FIN is cancelled too.
    func testCancellingStreamsTellsTheEncoder() throws {
        var enc = TestQPACKEncoder()
        let capacity = enc.setCapacity(4096)
        let insert = enc.insert("x-a", "1")
        let g = Glue()
        g.startClient(encoder: capacity)
        _ = g.output(.qpackDecoder)
        g.deliver(0, Wire.headers(section: enc.section(Wire.post() + [("x-a", "1")])))
        g.reset(0)
        XCTAssertEqual(g.take(), [.reset(0, .requestCancelled)])
        XCTAssertEqual(try decoderInstructions(g), [.cancel(0)])
        g.deliver(6, insert)
        XCTAssertEqual(g.take(), [], "a cancelled stream is not released")
        XCTAssertEqual(try decoderInstructions(g), [.insertCountIncrement(1)])

        g.deliver(4, Wire.headers(Wire.post()))
        g.deliver(8, Wire.headers(Wire.post()))
        g.deliver(12, Wire.headers(Wire.post()), fin: true)
        _ = g.take()
        g.session.resetStream(streamID: 4)
        g.session.stopReading(streamID: 8)
        g.session.resetStream(streamID: 12)
        XCTAssertEqual(try decoderInstructions(g), [.cancel(4), .cancel(8)], "stream 12 was read to its FIN")
    }

    // RFC 9204 Appendix B, over streams: the encoder stream of B.2–B.5 on the
    // client's encoder stream, the sections of B.1, B.2 and B.4 in HEADERS
    // frames on request streams 0, 4 and 8, the decoder stream written
    // between steps. The appendix's sections carry no :method, so each
    // request is malformed (H3_MESSAGE_ERROR) — after decoding, so the
    // decoder stream says exactly what the appendix prints.
    func testRFC9204AppendixBOverStreams() throws {
        let g = Glue()
        g.deliver(2, Wire.control(H3Settings()))
        XCTAssertEqual(try decoderInstructions(g, firstWrite: true), [])
        // B.1 Literal Field Line with Name Reference (stream 0).
        g.deliver(0, Wire.headers(section: hex("0000 510b 2f69 6e64 6578 2e68 746d 6c")), fin: true)
        XCTAssertEqual(g.output(.qpackDecoder), [], "B.1: no dynamic references, no acknowledgment")
        // B.2 Dynamic Table (stream 4): Section Acknowledgment, 84.
        g.deliver(6, [0x02] + hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468"))
        g.deliver(4, Wire.headers(section: hex("0381 10 11")), fin: true)
        XCTAssertEqual(g.output(.qpackDecoder), hex("84"))
        // B.3 Speculative Insert: Insert Count Increment, 01.
        g.deliver(6, hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565"))
        XCTAssertEqual(g.output(.qpackDecoder), hex("01"))
        // B.4 Duplicate delayed; stream 8 blocks and is cancelled: 48.
        g.deliver(8, Wire.headers(section: hex("0500 80 c1 81")), fin: true)
        XCTAssertTrue(g.session.isBlocked(streamID: 8))
        g.reset(8)
        XCTAssertEqual(g.output(.qpackDecoder), hex("48"))
        g.deliver(6, hex("02"))
        // B.5 Dynamic Table Insert, Eviction.
        g.deliver(6, hex("810d 6375 7374 6f6d 2d76 616c 7565 32"))
        XCTAssertEqual(g.session.decoder.table.size, 215)
        XCTAssertEqual(g.session.decoder.table.droppedCount, 1)
        XCTAssertEqual(try decoderInstructions(g), [.insertCountIncrement(2)], "the Duplicate and the B.5 insert")
        XCTAssertEqual(g.take(), [.settings(H3Settings()), .error(0, H3Error(.missingMethod)), .error(4, H3Error(.missingMethod)),
                                  .reset(8, .requestCancelled)])
        XCTAssertNil(g.session.connectionFailure)
    }
}
