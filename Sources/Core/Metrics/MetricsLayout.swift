/// The layout of one block of worker counters in the shared metrics region:
/// the one definition the workers (which write) and the supervisor (which
/// reads, sums and exposes) share.
///
/// A block is `MetricsLayout.blockWords` 64-bit words; each family below
/// is a run of words at a fixed offset, indexed by its labels' cases. Every
/// word is a counter (it only grows while its writer lives, and the
/// supervisor folds it into a retired total when the writer exits), except
/// `pythonVersion`, which is information. Gauges are not stored: requests
/// and connections in flight are "started minus ended" of the live blocks.
///
/// 160 words: 1280 bytes, a whole number of 64-byte cache lines, so no two
/// writers ever share a line.
public enum MetricsLayout {
    /// Requests by protocol and status class (`requests + protocol *
    /// StatusClass.count + class`), counted when the request ends.
    public static let requests = 0
    /// Requests begun, by protocol (in flight: begun minus ended).
    public static let requestsBegun = requests + MetricsProtocol.count * StatusClass.count
    /// Request duration: per protocol, `DurationBuckets.count` buckets (not
    /// cumulative; the supervisor accumulates them), then per protocol the
    /// sum in microseconds.
    public static let durationBuckets = requestsBegun + MetricsProtocol.count
    public static let durationMicroseconds = durationBuckets + MetricsProtocol.count * DurationBuckets.count
    /// Connections accepted and closed, by transport.
    public static let connectionsOpened = durationMicroseconds + MetricsProtocol.count
    public static let connectionsClosed = connectionsOpened + MetricsTransport.count
    /// Bytes read and written by the server, by transport: HTTP bytes after
    /// TLS decryption on TCP, UDP payloads on QUIC.
    public static let bytesReceived = connectionsClosed + MetricsTransport.count
    public static let bytesSent = bytesReceived + MetricsTransport.count
    /// TLS handshakes by transport and outcome.
    public static let tlsHandshakes = bytesSent + MetricsTransport.count
    /// HTTP/2 streams opened by clients.
    public static let http2Streams = tlsHandshakes + MetricsTransport.count * TLSHandshakeOutcome.count
    /// HTTP/2 RST_STREAM frames by error code (`H2ResetCode`).
    public static let http2Resets = http2Streams + 1
    /// WebSocket messages received and sent (any protocol).
    public static let webSocketMessagesIn = http2Resets + H2ResetCode.count
    public static let webSocketMessagesOut = webSocketMessagesIn + 1
    /// Requests the server refused itself, by reason.
    public static let rejected = webSocketMessagesOut + 1
    /// QUIC path events (ECN, path MTU), by `QUICPathEvent`.
    public static let quicPathEvents = rejected + RejectReason.count
    /// WebTransport sessions by `WebTransportSessionResult`.
    public static let webTransportSessions = quicPathEvents + QUICPathEvent.count
    /// WebTransport data streams opened (by either side).
    public static let webTransportStreams = webTransportSessions + WebTransportSessionResult.count
    /// WebTransport datagrams received (read from QUIC) and sent (queued to QUIC).
    public static let webTransportDatagramsIn = webTransportStreams + 1
    public static let webTransportDatagramsOut = webTransportDatagramsIn + 1
    /// WebTransport datagrams dropped, by `WebTransportDatagramDrop`.
    public static let webTransportDatagramsDropped = webTransportDatagramsOut + 1
    /// The worker's Python version, `major << 16 | minor << 8 | micro`
    /// (0: not known yet). Information, never folded.
    public static let pythonVersion = webTransportDatagramsDropped + WebTransportDatagramDrop.count
    /// Words in use; the rest of the block is padding.
    public static let usedWords = pythonVersion + 1
    public static let blockWords = 160
}

/// The `protocol` label of the request families.
public enum MetricsProtocol: Int, CaseIterable, Sendable {
    case http11, h2, h3, websocket
    public static let count = 4
    public var label: String {
        switch self {
        case .http11: "http/1.1"
        case .h2: "h2"
        case .h3: "h3"
        case .websocket: "websocket"
        }
    }
}

/// The `status` label: the class of the final status sent, or `none` when
/// the request ended (the client went away, a stream was reset) before one.
public enum StatusClass: Int, CaseIterable, Sendable {
    case informational, success, redirection, clientError, serverError, none
    public static let count = 6
    @inlinable public init(status: Int) {
        switch status {
        case 100...199: self = .informational
        case 200...299: self = .success
        case 300...399: self = .redirection
        case 400...499: self = .clientError
        case 500...599: self = .serverError
        default: self = .none
        }
    }
    public var label: String {
        switch self {
        case .informational: "1xx"
        case .success: "2xx"
        case .redirection: "3xx"
        case .clientError: "4xx"
        case .serverError: "5xx"
        case .none: "none"
        }
    }
}

/// The `transport` label: TCP (HTTP/1.1, HTTP/2, WebSocket over either) or
/// QUIC (HTTP/3).
public enum MetricsTransport: Int, CaseIterable, Sendable {
    case tcp, quic
    public static let count = 2
    public var label: String { self == .tcp ? "tcp" : "quic" }
}

/// The `result` label of the TLS handshakes.
public enum TLSHandshakeOutcome: Int, CaseIterable, Sendable {
    case full, resumed, failed
    public static let count = 3
    public var label: String {
        switch self {
        case .full: "full"
        case .resumed: "resumed"
        case .failed: "failed"
        }
    }
}

/// The `code` label of the HTTP/2 resets: the RFC 9113 §7 codes 0x0–0xd by
/// name, and `unknown` for any other (an extension's code, which RFC 9113
/// §7 says must not trigger special behaviour).
public enum H2ResetCode {
    public static let names = [
        "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
        "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
        "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED", "unknown",
    ]
    public static let count = 15
    @inlinable public static func index(_ code: UInt32) -> Int { code <= 0xd ? Int(code) : 14 }
}

/// The `reason` label of the refused requests: the status the server
/// answered with itself, without the application.
public enum RejectReason: Int, CaseIterable, Sendable {
    case badRequest, requestTimeout, contentTooLarge, uriTooLong, fieldsTooLarge, unavailable, other
    public static let count = 7
    @inlinable public init(status: Int) {
        switch status {
        case 400: self = .badRequest
        case 408: self = .requestTimeout
        case 413: self = .contentTooLarge
        case 414: self = .uriTooLong
        case 431: self = .fieldsTooLarge
        case 503: self = .unavailable
        default: self = .other
        }
    }
    /// The status as the label value (`other`: any other 4xx/5xx, such as
    /// 501 or 505).
    public var label: String {
        switch self {
        case .badRequest: "400"
        case .requestTimeout: "408"
        case .contentTooLarge: "413"
        case .uriTooLong: "414"
        case .fieldsTooLarge: "431"
        case .unavailable: "503"
        case .other: "other"
        }
    }
}

/// The request-duration histogram's upper bounds, in microseconds: 0.5 ms
/// to 10 s in 1-2.5-5 steps, then +Inf (the last bucket). Duration: from
/// the request head's arrival to the end of the response (for WebSocket:
/// to the handshake's response).
public enum DurationBuckets {
    public static let upperBoundsMicroseconds: [Int64] = [
        500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
        1_000_000, 2_500_000, 5_000_000, 10_000_000,
    ]
    /// The finite bounds plus +Inf.
    public static let count = 15

    /// The bucket of a duration: a short scan, since most requests land in
    /// the first few.
    @inlinable public static func index(microseconds: Int64) -> Int {
        if microseconds <= 500 { return 0 }
        if microseconds <= 1_000 { return 1 }
        if microseconds <= 2_500 { return 2 }
        if microseconds <= 5_000 { return 3 }
        if microseconds <= 10_000 { return 4 }
        if microseconds <= 25_000 { return 5 }
        if microseconds <= 50_000 { return 6 }
        if microseconds <= 100_000 { return 7 }
        if microseconds <= 250_000 { return 8 }
        if microseconds <= 500_000 { return 9 }
        if microseconds <= 1_000_000 { return 10 }
        if microseconds <= 2_500_000 { return 11 }
        if microseconds <= 5_000_000 { return 12 }
        if microseconds <= 10_000_000 { return 13 }
        return 14
    }
}

/// The `event` label of the QUIC path events.
public enum QUICPathEvent: Int, CaseIterable, Sendable {
    /// A valid increase of the peer's ECN-CE count reduced a congestion
    /// window (RFC 9002 §7.1) — or would have, inside a recovery period.
    case ecnCongestion
    /// A connection's ECN validation failed and it stopped marking (RFC 9000 §13.4.2.2).
    case ecnValidationFailed
    /// Path MTU discovery confirmed a larger datagram size (RFC 8899).
    case pmtuRaised
    /// A connection's datagram size fell back to 1200 bytes (RFC 8899 §4.3 black hole).
    case pmtuBlackHole
    public static let count = 4
    public var label: String {
        switch self {
        case .ecnCongestion: "ecn_ce"
        case .ecnValidationFailed: "ecn_validation_failed"
        case .pmtuRaised: "pmtu_raised"
        case .pmtuBlackHole: "pmtu_black_hole"
        }
    }
}

/// The `result` label of the WebTransport sessions: accepted (the 200 went
/// out) or refused (by the application with a status, or by the server:
/// over the session limit, a malformed CONNECT).
public enum WebTransportSessionResult: Int, CaseIterable, Sendable {
    case accepted, refused
    public static let count = 2
    public var label: String { self == .accepted ? "accepted" : "refused" }
}

/// The `reason` label of the dropped WebTransport datagrams (unreliable by
/// contract: dropped and counted, never queued without bound).
public enum WebTransportDatagramDrop: Int, CaseIterable, Sendable {
    /// A queue was full: the application's receive queue, the datagrams
    /// held for a session not accepted yet, or QUIC's send or receive queue.
    case queueFull
    /// The application's datagram does not fit the peer's
    /// max_datagram_frame_size or the path.
    case tooLarge
    /// For a session that is gone, refused, or not there.
    case noSession
    public static let count = 3
    public var label: String {
        switch self {
        case .queueFull: "queue_full"
        case .tooLarge: "too_large"
        case .noSession: "no_session"
        }
    }
}
