import XCTest

@testable import WebSocket

/// permessage-deflate offers (RFC 7692 §5, §7.1): the first acceptable one
/// is accepted with its parameters, invalid ones are declined.
final class PerMessageDeflateNegotiationTests: XCTestCase {
    func testPlainOfferIsAcceptedAsIs() {
        XCTAssertEqual(negotiate("permessage-deflate")?.responseValue, "permessage-deflate")
        XCTAssertEqual(negotiate("permessage-deflate; client_max_window_bits")?.responseValue, "permessage-deflate")
    }

    func testParametersAreHonouredAndAnswered() {
        let agreed = negotiate("permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
            + "server_max_window_bits=10; client_max_window_bits=\"12\"")
        XCTAssertEqual(agreed, PerMessageDeflateParameters(serverNoContextTakeover: true, clientNoContextTakeover: true,
                                                           serverMaxWindowBits: 10, clientMaxWindowBits: 12))
        XCTAssertEqual(agreed?.responseValue, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
            + "server_max_window_bits=10; client_max_window_bits=12")
        XCTAssertEqual(agreed?.deflateWindowBits, 10)
        XCTAssertEqual(agreed?.inflateWindowBits, 12)
    }

    func testWindowBitsEightIsAcceptedButNotUsedForDeflate() {
        let agreed = negotiate("permessage-deflate; server_max_window_bits=8; client_max_window_bits=8")
        XCTAssertEqual(agreed?.responseValue, "permessage-deflate; server_max_window_bits=8; client_max_window_bits=8")
        XCTAssertEqual(agreed?.serverCompresses, false)
        XCTAssertEqual(agreed?.inflateWindowBits, 9)
    }

    func testInvalidOffersAreDeclinedAndTheNextOneTaken() {
        for bad in ["permessage-deflate; foo", "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                    "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
                    "permessage-deflate; server_no_context_takeover=1", "permessage-deflate; client_no_context_takeover=true",
                    "permessage-deflate; server_max_window_bits", "permessage-deflate; server_max_window_bits=7",
                    "permessage-deflate; server_max_window_bits=16", "permessage-deflate; server_max_window_bits=010",
                    "permessage-deflate; client_max_window_bits=0", "permessage-deflate; client_max_window_bits=abc"] {
            XCTAssertNil(negotiate(bad), bad)
            XCTAssertEqual(negotiate(bad + ", permessage-deflate; client_no_context_takeover")?.responseValue,
                           "permessage-deflate; client_no_context_takeover", bad)
        }
    }

    func testOtherExtensionsAndSeveralFieldLines() {
        XCTAssertNil(negotiate("x-webkit-deflate-frame", "deflate-stream"))
        XCTAssertEqual(negotiate("x-foo; a=1", "permessage-deflate; server_max_window_bits=9, permessage-deflate")?.responseValue,
                       "permessage-deflate; server_max_window_bits=9")
        XCTAssertEqual(negotiate("Permessage-Deflate; Server_No_Context_Takeover")?.serverNoContextTakeover, true)
    }

    func testMalformedValueStopsThatValueOnly() {
        XCTAssertNil(negotiate("a b, permessage-deflate"))
        XCTAssertEqual(negotiate("permessage-deflate; server_max_window_bits=11, ;;", "permessage-deflate")?.serverMaxWindowBits, 11)
        XCTAssertNotNil(negotiate("a b", "permessage-deflate"))
    }

    private func negotiate(_ values: String...) -> PerMessageDeflateParameters? {
        let arrays = values.map { Array($0.utf8) }
        var pointers: [UnsafeMutableRawBufferPointer] = []
        for a in arrays {
            let p = UnsafeMutableRawBufferPointer.allocate(byteCount: max(a.count, 1), alignment: 1)
            p.copyBytes(from: a)
            pointers.append(UnsafeMutableRawBufferPointer(rebasing: p[0..<a.count]))
        }
        defer { for p in pointers { p.deallocate() } }
        return PerMessageDeflateParameters.negotiate(fieldValues: pointers.map { UnsafeRawBufferPointer($0) })
    }
}
