// A keep-alive hello exchange allocates nothing per request once the
// connection is under way (issue 20 point 2; STYLE.md §6, after swift-nio's
// allocation-count tests). AllocationCounter interposes malloc for the test
// executable and counts per thread; the region counted is what the server's
// HTTP/1.1 core does per request: parse the head of a keep-alive GET into
// the connection's header table (RFC 9112 §2–§6), decide the response
// framing (RFC 9112 §6.3, §9.3), and write the response head and the body
// into the connection's output buffer. The request bytes are built once,
// outside the counted region.

import AllocationCounter
import Core
import XCTest

@testable import HTTP1

final class H1AllocationTests: XCTestCase {
    private let warmUp = 100
    private let measured = 1000
    private static let date: StaticString = "Sun, 06 Nov 1994 08:49:37 GMT"

    func testAKeepAliveHelloRequestAndResponseAllocateNothing() {
        let request = Array("GET /hello?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\n\r\n".utf8)
        let body = Array("Hello, world!".utf8)
        let fields = [StaticField("content-type", "text/plain")]
        var parser = H1HeadParser(limits: H1Limits())
        let table = H1HeaderTable(capacity: H1Limits().maxHeaderCount)
        var output = [UInt8](repeating: 0, count: 4096)
        var parseAllocations: Int64 = 0
        var writeAllocations: Int64 = 0
        var written = 0

        request.withUnsafeBytes { request in
            fields.withUnsafeBufferPointer { fields in
                body.withUnsafeBytes { body in
                    output.withUnsafeMutableBytes { output in
                        for i in 0..<(warmUp + measured) {
                            let start = allocation_counter_thread_total()
                            parser.reset()
                            let result = parser.parse(request, headers: table)
                            let parsed = allocation_counter_thread_total()
                            guard case .complete(let head) = result, head.keepAlive, head.headLength == request.count else {
                                return XCTFail("request \(i): \(result)")
                            }
                            let beforeWrite = allocation_counter_thread_total()
                            let framing = H1ResponseFraming(
                                version: head.version, isHead: head.method == .head, requestKeepAlive: head.keepAlive,
                                status: 200, contentLength: Int64(body.count), trailers: false,
                                applicationClose: false, stopping: false)
                            let response = H1ResponseHead(status: 200, reason: staticBytes(""), fields: fields,
                                                          framing: framing, date: staticBytes(H1AllocationTests.date))
                            precondition(response.length + body.count <= output.count)
                            var n = response.write(into: output.baseAddress!)
                            (output.baseAddress! + n).copyMemory(from: body.baseAddress!, byteCount: body.count)
                            n += body.count
                            let wrote = allocation_counter_thread_total()
                            if i >= warmUp {
                                parseAllocations += parsed - start
                                writeAllocations += wrote - beforeWrite
                            }
                            written = n
                        }
                    }
                }
            }
        }
        XCTAssertEqual(String(decoding: output[..<written], as: UTF8.self),
                       "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                       + "content-length: 13\r\n\r\nHello, world!")
        XCTAssertEqual(table.count, 3, "the head's fields are in the table")
        XCTAssertEqual(parseAllocations, 0, "parsing \(measured) request heads")
        XCTAssertEqual(writeAllocations, 0, "writing \(measured) responses")
        print("http1 allocations: parse \(parseAllocations), write \(writeAllocations) for \(measured) requests")
    }
}
