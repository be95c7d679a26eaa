// What an HTTP/2 server connection advertises and enforces (DESIGN principle
// 6: every bound has an answer). Each limit's doc says what happens when it
// is hit. The abuse budgets follow nghttp2's defaults where it has one
// (CVE-2023-44487 reset rate, CVE-2024-28182 CONTINUATION count, outbound
// ack queue), so a client that nghttp2 serves is served here too.

/// Settings we advertise and budgets we enforce on one HTTP/2 connection.
public struct H2Limits: Sendable {
    // MARK: advertised (RFC 9113 §6.5.2)

    /// SETTINGS_MAX_CONCURRENT_STREAMS. A HEADERS frame that would open one
    /// more stream is answered with RST_STREAM(REFUSED_STREAM) (§5.1.2); the
    /// client may retry it.
    public var maxConcurrentStreams = 100
    /// SETTINGS_INITIAL_WINDOW_SIZE: how many body bytes a client may send on
    /// a stream before the application consumes some. More → RST_STREAM
    /// (FLOW_CONTROL_ERROR). At most 2^31-1.
    public var initialStreamWindow = 256 * 1024
    /// The connection receive window, raised from 65535 by a WINDOW_UPDATE
    /// on stream 0 sent with our SETTINGS: the most unconsumed body the
    /// connection can hold over all streams. More → GOAWAY
    /// (FLOW_CONTROL_ERROR). Clamped to 65535...2^31-1 (the initial 65535
    /// cannot be taken back).
    public var connectionWindow = 1 << 20
    /// SETTINGS_MAX_FRAME_SIZE (16384...16777215). A larger frame → GOAWAY
    /// (FRAME_SIZE_ERROR). Raised in the parser only once acknowledged.
    public var maxFrameSize = 16384
    /// SETTINGS_MAX_HEADER_LIST_SIZE (name + value + 32 per field). A request
    /// over it is answered 431 by the connection itself (the application never
    /// sees it); trailers over it reset the stream (PROTOCOL_ERROR). A block
    /// decoding to over `hpackBombFactor` times this ends the connection
    /// (ENHANCE_YOUR_CALM).
    public var maxHeaderListSize = 16384
    /// SETTINGS_HEADER_TABLE_SIZE: our HPACK decoder's dynamic table. A size
    /// update above it → GOAWAY (COMPRESSION_ERROR).
    public var headerTableSize = 4096
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441): accept extended CONNECT
    /// with `:protocol`. Off: `:protocol` makes a request malformed.
    public var enableConnectProtocol = false
    /// How long the peer has to acknowledge our SETTINGS (§6.5.3). Past it
    /// → GOAWAY (SETTINGS_TIMEOUT).
    public var settingsAckTimeoutMilliseconds = 10_000

    // MARK: abuse budgets

    /// Control frames we queue in answer to the peer (SETTINGS and PING
    /// acks, RST_STREAM) that the server has not yet written. One more →
    /// GOAWAY (ENHANCE_YOUR_CALM): a peer that floods PING or SETTINGS while
    /// not reading cannot grow `output` without bound. nghttp2: 1000.
    public var maxQueuedControlFrames = 1000
    /// Stream resets — by the peer on a stream still open, or by us for the
    /// peer's stream error — allowed in a burst before the rate below
    /// applies (CVE-2023-44487 "rapid reset"). Beyond → GOAWAY
    /// (ENHANCE_YOUR_CALM). nghttp2: 1000 burst, 33 per second.
    public var rapidResetBurst = 1000
    /// Resets the budget above regains per second.
    public var rapidResetPerSecond = 33
    /// Frames carrying nothing — DATA with no payload and no END_STREAM,
    /// HEADERS or CONTINUATION with an empty fragment and no END_HEADERS —
    /// allowed in a burst. Beyond → GOAWAY (ENHANCE_YOUR_CALM).
    public var emptyFrameBurst = 100
    /// Empty frames the budget above regains per second.
    public var emptyFramesPerSecond = 10
    /// CONTINUATION frames after one HEADERS frame (CVE-2024-27316 /
    /// CVE-2024-28182 "CONTINUATION flood"). One more → GOAWAY
    /// (ENHANCE_YOUR_CALM). nghttp2: 8.
    public var maxContinuationFrames = 8
    /// Bytes of one encoded header block (HEADERS + CONTINUATION fragments)
    /// we buffer. More → GOAWAY (ENHANCE_YOUR_CALM); the block is never
    /// decoded, so memory stays bounded whatever the client sends.
    public var maxHeaderBlockBytes = 64 * 1024
    /// Closed streams remembered (id and whether we reset it), so late frames
    /// are judged per §5.1: ignored after our RST_STREAM, STREAM_CLOSED
    /// otherwise. A stream forgotten is treated as closed long ago.
    public var closedStreamMemory = 128

    public init() {}
}

extension H2Limits {
    /// The values actually used: each clamped to what the RFC allows.
    var clamped: H2Limits {
        var l = self
        l.maxConcurrentStreams = max(0, min(l.maxConcurrentStreams, Int(Int32.max)))
        l.initialStreamWindow = max(0, min(l.initialStreamWindow, Int(SettingsLimits.maxWindowSize)))
        l.connectionWindow = max(defaultWindow, min(l.connectionWindow, Int(SettingsLimits.maxWindowSize)))
        l.maxFrameSize = max(Int(SettingsLimits.minMaxFrameSize), min(l.maxFrameSize, Int(SettingsLimits.maxMaxFrameSize)))
        l.maxHeaderListSize = max(0, min(l.maxHeaderListSize, Int(Int32.max)))
        l.headerTableSize = max(0, min(l.headerTableSize, Int(Int32.max)))
        l.maxQueuedControlFrames = max(1, l.maxQueuedControlFrames)
        l.maxHeaderBlockBytes = max(Int(SettingsLimits.minMaxFrameSize), l.maxHeaderBlockBytes)
        l.closedStreamMemory = max(1, l.closedStreamMemory)
        return l
    }
}

/// The initial window of every stream and of the connection (§6.9.2).
let defaultWindow = 65_535
