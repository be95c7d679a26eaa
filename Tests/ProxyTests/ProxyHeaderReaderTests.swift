import XCTest

@testable import Proxy

/// `ProxyHeaderReader`: peeking and consuming takes exactly the header off
/// the socket, whatever the peeks return, and leaves what follows (a TLS
/// ClientHello, an HTTP/2 preface) in place.
final class ProxyHeaderReaderTests: XCTestCase {
    /// A socket's receive queue: `arrived` bytes can be peeked and read.
    struct Socket {
        var bytes: [UInt8]
        var arrived: Int
        var read = 0

        func peek(max: Int) -> ArraySlice<UInt8> { bytes[read..<min(arrived, read + max)] }
        mutating func consume(_ n: Int) -> Bool {
            guard read + n <= arrived else { return false }
            read += n
            return true
        }
    }

    enum Outcome: Equatable {
        case complete(ProxyHeader, rest: [UInt8])
        case failed(ProxyHeaderError)
        case waiting(consumed: Int)
    }

    /// Runs the reader's loop as the worker does, with the bytes arriving
    /// `chunk` at a time and each peek bounded by `peekSize`.
    func run(_ bytes: [UInt8], chunk: Int, peekSize: Int = .max, closeAtEnd: Bool = false,
             reader: ProxyHeaderReader = ProxyHeaderReader()) -> Outcome {
        var socket = Socket(bytes: bytes, arrived: 0)
        var taken: [UInt8] = []
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 10_000)
            socket.arrived = min(socket.arrived + chunk, bytes.count)
            let peeked = Array(socket.peek(max: min(peekSize, reader.peekLimit(taken: taken.count))))
            let seen = taken + peeked
            let closed = peeked.isEmpty && socket.arrived == bytes.count && closeAtEnd
            switch seen.withUnsafeBytes({ reader.next($0, taken: taken.count, peerClosed: closed) }) {
            case .consume(let n):
                XCTAssertEqual(n, peeked.count, "a header still incomplete takes every byte seen")
                XCTAssertTrue(socket.consume(n))
                taken += peeked
                if peeked.isEmpty && socket.arrived == bytes.count && !closeAtEnd { return .waiting(consumed: taken.count) }
            case .complete(let header, let n):
                XCTAssertTrue(n >= 0 && n <= peeked.count, "consumes \(n) of \(peeked.count) peeked")
                XCTAssertTrue(socket.consume(n))
                XCTAssertEqual(taken.count + n, header.length, "exactly the header is taken")
                return .complete(header, rest: Array(bytes[socket.read...]))
            case .failed(let error):
                return .failed(error)
            }
        }
    }

    /// What follows a header on a TLS connection: the start of a ClientHello.
    let clientHello: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0xF1, 0x01, 0x00, 0x00, 0xED, 0x03, 0x03]

    var headers: [[UInt8]] {
        [
            Array("PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n".utf8),
            Array("PROXY TCP6 2001:db8::1 2001:db8::2 1 65535\r\n".utf8),
            Array("PROXY UNKNOWN\r\n".utf8),
            v2(family: 0x11, body: ProxyHeaderDecoderV2Tests.tcp4Body),
            v2(family: 0x21, body: ProxyHeaderDecoderV2Tests.tcp6Body + tlv(0x20, [1, 0, 0, 0, 0]) + tlv(0x04, [0, 0])),
            v2(command: 0x20, family: 0x00, body: []),
            v2(family: 0x31, body: [UInt8](repeating: 0x2F, count: 216)),
        ]
    }

    func testExactlyTheHeaderIsTakenWhateverTheArrivalAndPeekSizes() {
        for header in headers {
            let whole = decode(header)
            guard case .complete(let expected) = whole else { return XCTFail("vector: \(whole)") }
            for follower in [clientHello, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8), []] {
                for chunk in [1, 2, 3, 7, 16, 64, 4096] {
                    for peekSize in [1, 5, 16, 107, .max] {
                        let outcome = run(header + follower, chunk: chunk, peekSize: peekSize)
                        XCTAssertEqual(outcome, .complete(expected, rest: follower),
                                       "chunk \(chunk), peek \(peekSize): \(header)")
                    }
                }
            }
        }
    }

    func testAnIncompleteHeaderWaitsHavingTakenWhatCame() {
        for header in headers {
            for cut in 0..<header.count {
                let outcome = run(Array(header.prefix(cut)), chunk: 3)
                XCTAssertEqual(outcome, .waiting(consumed: cut), "cut \(cut) of \(header)")
                XCTAssertEqual(run(Array(header.prefix(cut)), chunk: 3, closeAtEnd: true), .failed(.truncated))
            }
        }
    }

    func testRefusalsComeAsSoonAsTheBytesShowThem() {
        XCTAssertEqual(run(Array("GET / HTTP/1.1\r\n\r\n".utf8), chunk: 1), .failed(.missingSignature))
        XCTAssertEqual(run(clientHello, chunk: 64), .failed(.missingSignature))
        XCTAssertEqual(run(Array("PROXY UNKNOWN ".utf8) + [UInt8](repeating: 0x41, count: 200), chunk: 16),
                       .failed(.v1TooLong))
        // A v2 length over the cap is refused from the fixed part alone.
        let long = v2(family: 0x11, body: [], length: 5000)
        XCTAssertEqual(run(long, chunk: 16), .failed(.v2TooLong))
        let capped = ProxyHeaderReader(decoder: ProxyHeaderDecoder(maxV2Length: 12))
        XCTAssertEqual(run(v2(family: 0x21, body: ProxyHeaderDecoderV2Tests.tcp6Body), chunk: 4, reader: capped),
                       .failed(.v2TooLong))
    }

    func testThePeekLimitBoundsTheLongestHeader() {
        let reader = ProxyHeaderReader()
        XCTAssertEqual(reader.peekLimit(taken: 0), 16 + 4096)
        XCTAssertEqual(reader.peekLimit(taken: 100), 16 + 4096 - 100)
        XCTAssertEqual(reader.peekLimit(taken: 5000), 0)
        // A small v2 cap still leaves room for the longest v1 line (found by fuzz-proxy-protocol).
        let small = ProxyHeaderReader(decoder: ProxyHeaderDecoder(maxV2Length: 10))
        XCTAssertEqual(small.peekLimit(taken: 0), 107)
        let line = Array("PROXY TCP4 192.0.3.1 198.51.100.2 56324 443\r\n".utf8)
        guard case .complete(let h) = decode(line) else { return XCTFail("vector") }
        XCTAssertEqual(run(line + clientHello, chunk: 64, reader: small), .complete(h, rest: clientHello))
    }

    func testASpuriousWakeUpConsumesNothing() {
        let reader = ProxyHeaderReader()
        let partial = Array("PROXY TCP4".utf8)
        let step = partial.withUnsafeBytes { reader.next($0, taken: partial.count, peerClosed: false) }
        XCTAssertEqual(step, .consume(0))
    }
}
