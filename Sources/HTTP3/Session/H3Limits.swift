// What an HTTP/3 server session advertises and enforces (DESIGN principle 6:
// every bound has an answer). Each limit's doc says what happens when it is
// hit. Flow control, stream reassembly and the number of streams a client may
// open are QUIC's (its transport parameters); the glue configures QUIC from
// the same numbers (`maxConcurrentStreams` as initial_max_streams_bidi).

/// Settings the session advertises and bounds it enforces on one connection.
public struct H3Limits: Sendable, Equatable {
    // MARK: advertised in our SETTINGS (RFC 9114 §7.2.4.1, RFC 9204 §5)

    /// SETTINGS_MAX_FIELD_SECTION_SIZE (name + value + 32 per field, §4.2.2).
    /// A request head over it is answered 431 by the session itself (the
    /// application never sees it, `H3Event.headTooLarge`); trailers over it
    /// are a stream error H3_MESSAGE_ERROR.
    public var maxFieldSectionSize = 16384
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY: our QPACK decoder's dynamic table.
    /// A Set Dynamic Table Capacity above it → connection error
    /// QPACK_ENCODER_STREAM_ERROR (RFC 9204 §4.3.1).
    public var qpackMaxTableCapacity = 4096
    /// SETTINGS_QPACK_BLOCKED_STREAMS: request streams whose field section
    /// may wait for encoder-stream inserts (RFC 9204 §2.1.2). One more →
    /// connection error QPACK_DECOMPRESSION_FAILED. Each keeps a copy of its
    /// encoded section (at most `maxHeadersFrameBytes`).
    public var qpackBlockedStreams = 100
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220): accept extended CONNECT
    /// with `:protocol`. Off: `:protocol` makes a request malformed
    /// (H3_MESSAGE_ERROR).
    public var enableConnectProtocol = false

    // MARK: enforced

    /// Request streams open at once (opened by the client, the exchange not
    /// yet finished both ways). A request stream opened beyond it → stream error
    /// H3_REQUEST_REJECTED (§4.1.1: the client may retry it). QUIC's
    /// initial_max_streams_bidi should be the same number, so this is a
    /// second line only.
    public var maxConcurrentStreams = 100
    /// Bytes of one encoded HEADERS frame payload the session buffers. More →
    /// stream error H3_EXCESSIVE_LOAD before the buffer grows further.
    public var maxHeadersFrameBytes = 64 * 1024
    /// Bytes of the peer's SETTINGS frame payload. More → connection error
    /// H3_EXCESSIVE_LOAD.
    public var maxSettingsFrameBytes = 4096
    /// Request streams remembered after they close, so late bytes the glue
    /// still passes for them are dropped instead of opening a stream again.
    public var closedStreamMemory = 128

    // MARK: extensions

    /// WebTransport over HTTP/3, both drafts (draft-ietf-webtrans-http3-02
    /// and the current one); nil: off. On, our SETTINGS advertise extended
    /// CONNECT, HTTP Datagrams and both drafts' WebTransport settings, and
    /// streams opened with the WebTransport signal (bidirectional 0x41,
    /// unidirectional type 0x54) are handed to the glue as
    /// `H3Event.webTransportStream` for its `WebTransportRegistry`. Off, they
    /// are ordinary (and malformed) request streams or ignored stream types.
    public var webTransport: WebTransportLimits?

    public init() {}
}

extension H3Limits {
    /// The values actually used: each clamped to what the RFCs allow and to
    /// what keeps the session working.
    var clamped: H3Limits {
        var l = self
        l.maxFieldSectionSize = max(0, min(l.maxFieldSectionSize, Int(Int32.max)))
        // RFC 9204 §4.5.1.1 divides by MaxEntries = capacity / 32; a table
        // of 2^30 is far beyond any use.
        l.qpackMaxTableCapacity = max(0, min(l.qpackMaxTableCapacity, 1 << 30))
        l.qpackBlockedStreams = max(0, min(l.qpackBlockedStreams, 1 << 16))
        l.maxConcurrentStreams = max(1, l.maxConcurrentStreams)
        l.maxHeadersFrameBytes = max(64, l.maxHeadersFrameBytes)
        l.maxSettingsFrameBytes = max(64, l.maxSettingsFrameBytes)
        l.closedStreamMemory = max(1, l.closedStreamMemory)
        l.webTransport = l.webTransport?.clamped
        if l.webTransport != nil { l.enableConnectProtocol = true }
        return l
    }
}
