// The sans-I/O HTTP/3 server session (RFC 9114, RFC 9204) over abstract QUIC
// streams.
//
// Theory of operation. The glue owns the QUIC connection; this object owns
// everything HTTP/3 above it: the peer's control, QPACK encoder and decoder
// streams, the QPACK decoder and its dynamic table, every request stream's
// frame machine, the server's own three unidirectional streams, and GOAWAY.
// It never sees a QUIC type: streams are their 62-bit IDs, and bytes go in
// and out as plain buffers.
//
//     let h3 = H3Session(limits: H3Limits())  // our SETTINGS are waiting
//     on 1-RTT: open server uni streams 3, 7, 11 (H3LocalStream) and write
//         h3.writeOutput(for: s, into: &buffer) on each
//     on "client opened stream N": if let e = h3.peerOpened(streamID: N) { handle(e) }
//     on stream bytes (in order, as QUIC reassembled them), fin:
//         var off = 0
//         while true {
//             let (event, n) = h3.receive(streamID: id, bytes[off...], fin: fin)
//             off += n
//             guard let event else { break }   // keep bytes[off...] for later
//             handle(event)                    // may call beginHeaders/…
//         }
//     on RESET_STREAM / STOP_SENDING: h3.peerReset / h3.peerStopSending
//     after each batch: if h3.hasPendingOutput, write the local streams'
//         output; when h3.isFinished, close with H3_NO_ERROR
//
// Pull, not callbacks, as `H2Connection.nextEvent`: `receive` parses up to
// the first thing the glue must act on and returns it with the bytes it
// consumed; call again (with the rest, or nothing) until it returns nil.
// Events can come from a stream other than the one fed: inserts on the
// client's QPACK encoder stream release request streams whose field section
// was blocked (RFC 9204 §2.1.2), and their `.request`/`.trailers` follow the
// encoder-stream bytes that released them. Such a stream read nothing past
// its HEADERS frame while blocked (`receive` consumed 0 bytes of it, keeping
// them in QUIC flow control), so after that event the glue offers it its
// held bytes again.
//
// The FIN counts only when every byte before it has been consumed: a call
// that consumes less ignores `fin`, and the glue passes it again with the
// rest. Repeating a FIN already taken is harmless.
//
// Flow control is QUIC's: the bytes `receive` consumed may be dropped from the
// glue's reassembly buffer, but the body bytes of `.data` events are the
// application's until it reads them; QUIC stream and connection credit for
// them should come back only then (framing bytes can be credited at once:
// consumed minus the `.data` bytes).
//
// Scope (STYLE §4): a connection error returns `.connectionError` once and
// makes the session sticky-failed: later input is swallowed and send calls
// do nothing; the glue closes the connection with the code. A stream error
// forgets the stream, tells the QPACK encoder (Stream Cancellation) if its
// reading was abandoned early, and returns `.streamError`; the glue resets
// the stream. Malformed requests never reach the application.
//
// Nothing here reads a clock (HTTP/3 has no timers of its own: idle timeout
// and loss recovery are QUIC's) or builds a String.

import Core
import HTTPFields

/// One HTTP/3 server connection; see the file comment for the usage loop.
public final class H3Session {
    /// Limits, SETTINGS, frame bounds: the server's, shared by its sessions.
    let template: H3SessionTemplate
    var limits: H3Limits { template.limits }
    /// The SETTINGS we sent.
    public var localSettings: H3Settings { template.localSettings }
    /// The client's SETTINGS; nil until its control stream delivered them
    /// (until then its defaults apply: §7.2.4.2).
    public internal(set) var peerSettings: H3Settings?

    var decoder: QPACKDecoder
    let encoder = QPACKEncoder()
    /// Where field sections are decoded; shared by the sessions of a thread
    /// (H3HeaderScratch.swift).
    let headerScratch: H3HeaderScratch
    var frameLimits: H3FrameReader.Limits { template.frameLimits }

    // MARK: the client's unidirectional streams

    enum PeerUniStream {
        /// The stream type has not fully arrived (§6.2).
        case preamble(H3UniStreamPreamble)
        case control
        case qpackEncoder
        case qpackDecoder
        /// Unknown or reserved type: its bytes are discarded (§6.2.3).
        case ignored
        /// A WebTransport stream (type 0x54): the glue's registry reads it.
        case webTransport
    }

    var peerStreams = H3PeerStreams()
    var peerUniStreams: [UInt64: PeerUniStream] = [:]
    var controlStream: H3ControlStream
    var decoderStreamReader = QPACKDecoderStreamReader()

    // MARK: request streams

    var requests: [UInt64: H3RequestRecord] = [:]
    var closedRequests: ClosedStreamIDs
    /// Highest client-initiated bidirectional stream ID seen (opened or fed).
    var highestRequestStreamID: UInt64?
    /// Streams the QPACK decoder released, not yet decoded and reported.
    var unblocked: [UInt64] = []
    var unblockedHead = 0

    // MARK: output

    /// Bytes for our control, encoder and decoder streams (H3LocalStream).
    var localOutput = H3LocalOutput()
    /// The identifier of the last GOAWAY we sent (§5.2).
    public internal(set) var goAwayID: UInt64?
    /// Set by the first connection error; sticky.
    var failure: H3Error?

    struct OutgoingSection {
        var streamID: UInt64
        var informational: Bool
        var trailers: Bool
        /// The stream cannot take it (reset, unknown): fields are dropped.
        var discard: Bool
        /// RFC 9114 §4.2.2 size: name + value + 32 per field.
        var size: Int
    }

    var outgoing: OutgoingSection?
    /// The thread's (H3HeaderScratch): a section is encoded and framed in
    /// one go, so an idle session keeps no buffer of its own.
    var sendSection: [UInt8] {
        get { headerScratch.sendSection }
        _modify { yield &headerScratch.sendSection }
    }
    var nameScratch: [UInt8] {
        get { headerScratch.nameScratch }
        _modify { yield &headerScratch.nameScratch }
    }
    /// A 431 response HEADERS frame, built once per server
    /// (`H3Event.headTooLarge` points into it).
    var headTooLargeResponse: UnsafeMutableRawBufferPointer { template.headTooLargeResponse }

    /// Queues the control stream (stream type, SETTINGS with a reserved
    /// setting, a reserved frame) and the QPACK streams' types.
    /// - Parameter greaseSeed: picks the reserved setting, frame type and
    ///   frame payload (RFC 9114 §7.2.4.1, §7.2.8: values should vary, so
    ///   peers cannot come to depend on one); pass a random number.
    /// `headerScratch`: one per thread, shared by its sessions (a session
    /// of its own when not given).
    public convenience init(limits: H3Limits, greaseSeed: UInt64 = 0, headerScratch: H3HeaderScratch = H3HeaderScratch()) {
        self.init(template: H3SessionTemplate(limits: limits), greaseSeed: greaseSeed, headerScratch: headerScratch)
    }

    /// A session of a server whose sessions share `template`.
    public init(template: H3SessionTemplate, greaseSeed: UInt64 = 0, headerScratch: H3HeaderScratch = H3HeaderScratch()) {
        self.template = template
        self.headerScratch = headerScratch
        let l = template.limits
        decoder = QPACKDecoder(maxTableCapacity: l.qpackMaxTableCapacity, maxBlockedStreams: l.qpackBlockedStreams,
                               maxFieldSectionSize: l.maxFieldSectionSize)
        controlStream = H3ControlStream(limits: template.frameLimits)
        closedRequests = ClosedStreamIDs(capacity: l.closedStreamMemory)
        writePreambles(greaseSeed: greaseSeed)
    }

    // MARK: state for the glue

    /// Request streams open (counted against `maxConcurrentStreams`).
    public var openRequestCount: Int { requests.count }

    /// After a connection error or our GOAWAY.
    public var isClosing: Bool { failure != nil || goAwayID != nil }

    /// Nothing more will happen: a connection error, or our GOAWAY with a
    /// real identifier (not the announcing maximum) and no request stream
    /// left. Close the connection (H3_NO_ERROR after a GOAWAY, §5.2).
    public var isFinished: Bool {
        if failure != nil { return true }
        guard let goAwayID, goAwayID <= nextRequestStreamID else { return false }
        // Streams past the GOAWAY that may yet be WebTransport data streams
        // (`open`) hold nothing up: their sessions are requests of their own.
        return requests.values.allSatisfy { $0.refuseUnlessWebTransport }
    }

    /// The connection error that ended the session, if any.
    public var connectionFailure: H3Error? { failure }

    /// The lowest client bidirectional stream ID not yet seen.
    var nextRequestStreamID: UInt64 { highestRequestStreamID.map { $0 + 4 } ?? 0 }

    /// Whether `streamID` waits for QPACK encoder-stream inserts: it reads
    /// nothing until a `.request`/`.trailers` event for it.
    public func isBlocked(streamID: UInt64) -> Bool {
        requests[streamID]?.isDecoding ?? false
    }

    /// The request streams this session remembers, oldest first: those
    /// recently closed (a bounded list, `closedStreamMemory`), then those
    /// open. For a WebTransport registry made after them (the glue's).
    public func rememberedRequestIDs() -> [UInt64] {
        closedRequests.remembered + requests.keys.sorted()
    }

    /// Gives back what the maps and lists of finished requests kept (their
    /// capacity at the busiest moment) once the connection is idle (issue
    /// 15); the glue calls it with QUIC's `releaseIdleMemory`.
    public func releaseIdleMemory() {
        if requests.isEmpty { requests = [:] }
        if unblockedHead == 0 && unblocked.isEmpty { unblocked = [] }
    }

    // MARK: output

    /// Whether any local stream has bytes to write.
    public var hasPendingOutput: Bool {
        !localOutput.isEmpty || decoder.hasPendingDecoderStreamBytes
    }

    /// Appends the bytes waiting for our unidirectional stream `stream` to
    /// `out`. - Returns: how many.
    ///
    /// The QPACK decoder's instructions (RFC 9204 §4.4) are produced here,
    /// when the glue writes: Section Acknowledgments and Stream
    /// Cancellations in order, then one Insert Count Increment for the
    /// inserts they do not already acknowledge — so a batch of input costs
    /// one increment, not one per encoder-stream read.
    @discardableResult
    public func writeOutput(for stream: H3LocalStream, into out: inout [UInt8]) -> Int {
        let start = out.count
        out.append(contentsOf: localOutput[stream])
        // Our control and QPACK encoder streams carry a few bytes once (the
        // SETTINGS, a GOAWAY): their buffers are not kept for an idle session.
        localOutput[stream] = []
        if stream == .qpackDecoder { decoder.takeDecoderStreamBytes(into: &out) }
        return out.count - start
    }

    /// Stream types first (§6.2), then SETTINGS as the control stream's first
    /// frame (§6.2.1), with a reserved setting (§7.2.4.1: "Endpoints SHOULD
    /// include at least one such setting") and then a reserved frame type
    /// (§7.2.8, §9: the peer must keep ignoring unknown frames).
    private func writePreambles(greaseSeed seed: UInt64) {
        var control: [UInt8] = []
        H3FrameEncoder.appendStreamType(.control, to: &control)
        // N below 500 keeps the reserved values in two-byte integers.
        let setting = H3Grease.value(seed % 500)
        let frame = (seed >> 16) % 500
        H3FrameEncoder.appendSettings(localSettings, grease: setting, greaseValue: (seed >> 32) & 0x3fff, to: &control)
        var payload: [UInt8] = []
        for i in 0 ..< Int((seed >> 48) % 8) { payload.append(UInt8(truncatingIfNeeded: seed >> UInt64(i * 8))) }
        payload.withUnsafeBytes { H3FrameEncoder.appendGreaseFrame(frame, payload: $0, to: &control) }
        localOutput[.control] = control
        H3FrameEncoder.appendStreamType(.qpackEncoder, to: &localOutput[.qpackEncoder])
        H3FrameEncoder.appendStreamType(.qpackDecoder, to: &localOutput[.qpackDecoder])
    }

    // MARK: errors

    /// A connection error: everything stops; the glue closes the connection.
    func fail(_ error: H3Error) -> H3Event {
        if failure == nil {
            failure = error
            requests.removeAll()
            unblocked.removeAll()
            unblockedHead = 0
            outgoing = nil
        }
        return .connectionError(code: failure!.code, reason: failure!.reason)
    }

    static func encodeStatus(_ status: Int, _ encoder: QPACKEncoder, into out: inout [UInt8]) {
        let digits = (UInt8(0x30 + status / 100), UInt8(0x30 + status / 10 % 10), UInt8(0x30 + status % 10))
        withUnsafeBytes(of: digits) { value in
            statusName.withUTF8Buffer { encoder.encode(name: UnsafeRawBufferPointer($0), value: value, into: &out) }
        }
    }

    static let statusName: StaticString = ":status"
}
