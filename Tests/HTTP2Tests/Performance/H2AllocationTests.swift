// A hello exchange on an HTTP/2 connection, stream after stream, allocates
// (almost) nothing per request once the connection is under way (issue 20
// point 2; STYLE.md §6, after swift-nio's allocation-count tests).
// AllocationCounter interposes malloc for the test executable and counts per
// thread; the region counted is what the server's HTTP/2 core does per
// request: parse a HEADERS frame and HPACK-decode its block (RFC 9113 §6.2,
// RFC 7541 §3), validate it into a request head (RFC 9113 §8.3), open and
// close the stream (§5.1), HPACK-encode the response HEADERS (RFC 7541 §6),
// frame a DATA with END_STREAM (§6.1), and let the server drain the output.
// The client's frames are built once, outside the counted region.

import AllocationCounter
import Core
import XCTest

@testable import HTTP2

final class H2AllocationTests: XCTestCase {
    private let warmUp = 100
    private let measured = 1000

    func testAHelloRequestAndResponseStreamAfterStreamAllocateNothing() {
        helloStreamAfterStream(firstStreamID: 1)
    }

    /// RFC 9113 §5.1.1: stream ids climb to 2^31-1; the stream table is an
    /// array of live streams, not indexed by id, so high ids cost nothing
    /// more, and the last id of all is served like the first.
    func testStreamIDsUpToTheLastOneAllocateNothingAndNeverGrowTheStreamTable() {
        helloStreamAfterStream(firstStreamID: 0x7FFF_FFFF - UInt32(2 * (warmUp + measured - 1)))
    }

    private func helloStreamAfterStream(firstStreamID: UInt32) {
        let h = H2Harness()
        h.feed(h.windowUpdate(0, 1 << 30))
        _ = h.drain()
        let conn = h.conn
        let total = warmUp + measured
        // Every request's HEADERS, back to back; the block is the same for
        // each (no indexing), only the stream id differs.
        var wire: [UInt8] = []
        var ends: [Int] = []
        for i in 0..<total {
            wire += h.headers(firstStreamID + UInt32(2 * i), h.get("/hello", extra: [("user-agent", "bench/1.0"), ("accept", "*/*")]))
            ends.append(wire.count)
        }
        let tableCapacity = conn.streams.streams.capacity
        let body = Array("Hello, world!".utf8)
        let contentType = Array("content-type".utf8), textPlain = Array("text/plain".utf8)
        let contentLength = Array("content-length".utf8), thirteen = Array("13".utf8)
        var receive: Int64 = 0, respond: Int64 = 0, drain: Int64 = 0
        var responses = 0
        var lastOutput: [UInt8] = []

        wire.withUnsafeBytes { wire in
            body.withUnsafeBytes { body in
                contentType.withUnsafeBytes { ct in textPlain.withUnsafeBytes { tp in
                contentLength.withUnsafeBytes { cl in thirteen.withUnsafeBytes { n13 in
                    var at = 0
                    for i in 0..<total {
                        let streamID = firstStreamID + UInt32(2 * i)
                        let start = allocation_counter_thread_total()
                        let (event, n) = conn.nextEvent(in: UnsafeRawBufferPointer(rebasing: wire[at..<ends[i]]), now: h.now)
                        let received = allocation_counter_thread_total()
                        at += n
                        guard case .request(let id, let head, true) = event, id == streamID, at == ends[i],
                              head.path.count == 6 else {
                            return XCTFail("stream \(streamID): \(String(describing: event))")
                        }
                        let beforeRespond = allocation_counter_thread_total()
                        conn.beginHeaders(streamID: streamID, status: 200)
                        conn.addField(name: ct, value: tp)
                        conn.addField(name: cl, value: n13)
                        conn.endHeaders(endStream: false)
                        let sent = conn.sendData(streamID: streamID, body, endStream: true)
                        let responded = allocation_counter_thread_total()
                        XCTAssertEqual(sent, body.count)
                        if i == total - 1 { lastOutput = Array(conn.output.readable) }
                        let beforeDrain = allocation_counter_thread_total()
                        conn.output.readerIndex = conn.output.writerIndex  // written to the socket
                        let drained = allocation_counter_thread_total()
                        if i >= warmUp {
                            receive += received - start
                            respond += responded - beforeRespond
                            drain += drained - beforeDrain
                            responses += 1
                        }
                    }
                }}}}
            }
        }
        XCTAssertEqual(responses, measured)
        // The last response: HEADERS (HPACK, indexed by now) then DATA with END_STREAM.
        let header = lastOutput.withUnsafeBytes { FrameHeader.decode($0, at: 0)! }
        XCTAssertEqual(header.type, .headers)
        XCTAssertEqual(header.streamID, firstStreamID + UInt32(2 * (total - 1)))
        XCTAssertEqual(conn.streams.streams.capacity, tableCapacity, "the stream table never grew")
        XCTAssertEqual(conn.openStreamCount, 0)
        let data = lastOutput.withUnsafeBytes { FrameHeader.decode($0, at: 9 + header.length)! }
        XCTAssertEqual(data.type, .data)
        XCTAssertEqual(Array(lastOutput.suffix(body.count)), body)
        XCTAssertEqual(respond, 0, "encoding \(measured) responses (HPACK + DATA)")
        XCTAssertEqual(drain, 0, "draining the output")
        // The request head is lent (H2Event.request): the connection's own
        // arrays, rebuilt in place once the event is let go.
        XCTAssertEqual(receive, 0, "receiving \(measured) requests")
        print("http2 allocations: receive \(receive), respond \(respond), drain \(drain) for \(measured) requests")
    }
}

/// Where the receiving side's allocations are (STYLE §6: count around
/// sub-steps rather than guess): the HPACK decoder into a reused list, and
/// the validator that copies the list into a head — a new one (HTTP/3's
/// path: two arrays) or a reused one (HTTP/2's lent head: none).
final class H2ReceiveAllocationTests: XCTestCase {
    func testDecodingABlockIntoAReusedListAllocatesNothingAndANewHeadCostsTwo() {
        let h = H2Harness(handshake: false)
        let block = h.block(h.get("/hello", extra: [("user-agent", "bench/1.0"), ("accept", "*/*")]))
        var decoder = HPACKDecoder()
        var list = HeaderList()
        var validator = RequestValidator(allowProtocol: false)
        var decoding: Int64 = 0, building: Int64 = 0
        block.withUnsafeBytes { block in
            for i in 0..<1100 {
                let start = allocation_counter_thread_total()
                list.removeAll()
                try! decoder.decode(block, into: &list)
                let decoded = allocation_counter_thread_total()
                let head = try! validator.build(list, trailers: false)
                let built = allocation_counter_thread_total()
                XCTAssertEqual(head.fields.count, 2)
                if i >= 100 {
                    decoding += decoded - start
                    building += built - decoded
                }
            }
        }
        print("http2 receive sub-steps: hpack decode \(decoding), head build \(building) for 1000 blocks")
        XCTAssertEqual(decoding, 0, "HPACK decoding into a reused list")
        XCTAssertEqual(building, 2000, "the head's storage and field array, nothing else")
    }
}

extension H2ReceiveAllocationTests {
    func testBuildingIntoAReusedHeadAllocatesNothing() {
        let h = H2Harness(handshake: false)
        let block = h.block(h.get("/hello", extra: [("user-agent", "bench/1.0"), ("accept", "*/*"), ("cookie", "a=1"), ("cookie", "b=2")]))
        var decoder = HPACKDecoder()
        var list = HeaderList()
        var validator = RequestValidator(allowProtocol: false)
        var head = H2RequestHead()
        var building: Int64 = 0
        block.withUnsafeBytes { block in
            for i in 0..<1100 {
                list.removeAll()
                try! decoder.decode(block, into: &list)
                let start = allocation_counter_thread_total()
                try! validator.build(list, trailers: false, into: &head)
                let built = allocation_counter_thread_total()
                XCTAssertEqual(head.fields.count, 3)
                if i >= 100 { building += built - start }
            }
        }
        // RFC 9113 §8.2.3: the crumbs joined, also in a reused head.
        XCTAssertEqual(Array(head[head.fields[2].value]), Array("a=1; b=2".utf8))
        XCTAssertEqual(building, 0, "validating into a head whose arrays are reused")
    }
}
