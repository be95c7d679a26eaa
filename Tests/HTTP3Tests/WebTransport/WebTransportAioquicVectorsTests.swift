// Other people's bytes: what aioquic 1.7.2's client (H3Connection with
// enable_webtransport=True, draft-02) writes for one session, captured from
// its streams' send buffers, through H3Session and WebTransportRegistry
// together as the glue would route them — the data streams arriving before
// the CONNECT that names their session.

import XCTest
@testable import HTTP3

final class WebTransportAioquicVectorsTests: XCTestCase {
    /// Control stream: type 0, SETTINGS (QPACK 4096/16, ENABLE_CONNECT_PROTOCOL,
    /// a reserved 0x21, H3_DATAGRAM 0x33, ENABLE_WEBTRANSPORT 0x2b603742),
    /// MAX_PUSH_ID 8.
    static let control = hex("00 04 10 01 5000 07 10 08 01 21 01 33 01 ab603742 01 0d 01 08")
    /// Stream 0: HEADERS of the CONNECT (Huffman literals): :method CONNECT,
    /// :scheme https, :authority a.example, :path /wt, :protocol webtransport,
    /// origin https://a.example.
    static let connect = hex("""
        01 35 0000 cf d7 50 87 1a e5 f2 3a 6b a0 bf 51 03 2f 77 74 2f 00 b9 5d 87 49 c8 7a 3f 89 f0 58 d3 60
        ea 45 67 b1 3f 5f 4b 8d 9d 29 ad 17 18 60 6b 97 c8 e9 ae 82 ff
        """)
    /// Stream 4: WEBTRANSPORT_STREAM 0x41, session 0, "ping", FIN.
    static let bidi = hex("40 41 00") + bytes("ping")
    /// Stream 14: type 0x54, session 0, "uni", FIN.
    static let uni = hex("40 54 00") + bytes("uni")
    /// A QUIC DATAGRAM payload: quarter stream ID 0, "dg".
    static let datagram = hex("00") + bytes("dg")

    func testAioquicDraft02SessionEndToEnd() {
        var limits = H3Limits()
        limits.webTransport = WebTransportLimits()
        let h3 = Glue(limits)
        let wt = WTGlue()

        h3.deliver(2, Self.control)
        guard case .settings(let settings)? = h3.take().first else { return XCTFail("no SETTINGS") }
        XCTAssertTrue(settings.webTransport.enableWebTransportDraft02 && settings.webTransport.h3Datagram)
        wt.wt.peerSettingsReceived(settings)
        h3.deliver(6, [0x02])
        h3.deliver(10, [0x03])

        // The data streams and the datagram overtake the CONNECT.
        h3.deliver(4, Self.bidi, fin: true)
        h3.deliver(14, Self.uni, fin: true)
        XCTAssertEqual(h3.take(), [.webTransportStream(4, bidirectional: true), .webTransportStream(14, bidirectional: false)])
        wt.open(4, bidirectional: true)
        wt.deliver(4, h3.handedOff[4]!, fin: true)
        wt.open(14, bidirectional: false)
        wt.deliver(14, h3.handedOff[14]!, fin: true)
        wt.datagram(Self.datagram)
        XCTAssertEqual(wt.take(), [], "held for the session")

        h3.deliver(0, Self.connect)
        let request = h3.take()
        XCTAssertEqual(request, [.request(0, [":method: CONNECT", ":scheme: https", ":authority: a.example", ":path: /wt",
                                              ":protocol: webtransport", "origin: https://a.example"], end: false)])
        wt.wt.connectReceived(streamID: 0, draft: .draft02)
        XCTAssertEqual(wt.take(), [.requested(0, .draft02)])
        wt.wt.accept(sessionID: 0)
        XCTAssertEqual(wt.take(), [.released(4), .data(0, 4, "ping", fin: true), .released(14), .data(0, 14, "uni", fin: true),
                                   .datagram(0, "dg")])

        // What we write for our own streams is what aioquic reads: the same
        // header on a server stream.
        XCTAssertEqual(wt.wt.localStreamOpened(sessionID: 0, streamID: 3 + 12, bidirectional: false), hex("40 54 00"))
        XCTAssertEqual(wt.wt.localStreamOpened(sessionID: 0, streamID: 1, bidirectional: true), hex("40 41 00"))
    }
}
