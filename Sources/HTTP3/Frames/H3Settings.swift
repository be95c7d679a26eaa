// The SETTINGS frame payload (RFC 9114 §7.2.4; RFC 9204 §5; RFC 9220 §3).
//
// Decoding validates the whole frame before anything takes effect:
//   * each identifier at most once (§7.2.4 "MAY treat the presence of
//     duplicate setting identifiers as a connection error of type
//     H3_SETTINGS_ERROR" — we do, as h2o and quiche);
//   * the HTTP/2 identifiers without an HTTP/3 meaning (0x00, 0x02–0x05,
//     §7.2.4.1, §11.2.2) "MUST be treated as a connection error of type
//     H3_SETTINGS_ERROR";
//   * SETTINGS_ENABLE_CONNECT_PROTOCOL is 0 or 1 (RFC 8441 §3 via RFC 9220 §3);
//   * SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1, both codepoints) and draft-02's
//     SETTINGS_ENABLE_WEBTRANSPORT are 0 or 1; the current WebTransport
//     draft's settings are read into `webTransport`;
//   * "An implementation MUST ignore any parameter with an identifier it does
//     not understand" — reserved (grease) ones included;
//   * a payload that ends inside a parameter is H3_FRAME_ERROR (§7.1).

import Core

/// Known HTTP/3 setting identifiers.
public enum H3SettingID {
    /// RFC 9204 §5; default 0.
    public static let qpackMaxTableCapacity: UInt64 = 0x01
    /// RFC 9114 §7.2.4.1; default unlimited.
    public static let maxFieldSectionSize: UInt64 = 0x06
    /// RFC 9204 §5; default 0.
    public static let qpackBlockedStreams: UInt64 = 0x07
    /// RFC 9220 §5 (extended CONNECT); default 0.
    public static let enableConnectProtocol: UInt64 = 0x08

    /// §7.2.4.1: the identifiers reserved because HTTP/2 used them.
    public static func isHTTP2Only(_ id: UInt64) -> Bool { id == 0x00 || (0x02 ... 0x05).contains(id) }

    /// SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1); 0 or 1.
    public static let h3Datagram: UInt64 = 0x33
    /// The same, as draft-ietf-masque-h3-datagram-00…04 numbered it (older
    /// WebTransport draft-02 clients send it).
    public static let h3DatagramDraft04: UInt64 = 0xff_d277
    /// SETTINGS_ENABLE_WEBTRANSPORT (draft-ietf-webtrans-http3-02 §3.1); 0 or 1.
    public static let enableWebTransportDraft02: UInt64 = 0x2b60_3742
    /// SETTINGS_WT_ENABLED (draft-ietf-webtrans-http3 §3.1, IANA §9.2).
    public static let wtEnabled: UInt64 = 0x2c7c_f000
    /// SETTINGS_WT_INITIAL_MAX_STREAMS_UNI / _BIDI / SETTINGS_WT_INITIAL_MAX_DATA
    /// (draft-ietf-webtrans-http3 §5.5, IANA §9.2).
    public static let wtInitialMaxStreamsUni: UInt64 = 0x2b64
    public static let wtInitialMaxStreamsBidi: UInt64 = 0x2b65
    public static let wtInitialMaxData: UInt64 = 0x2b61
    /// SETTINGS_WEBTRANSPORT_MAX_SESSIONS of drafts 03–07 and
    /// SETTINGS_WT_MAX_SESSIONS of drafts 08–12: recorded, not acted on
    /// (a session limit is ours to enforce, §5.2).
    public static let wtMaxSessionsDraft07: UInt64 = 0xc671_706a
    public static let wtMaxSessionsDraft12: UInt64 = 0x14e9_cd29
}

/// What one side's SETTINGS say about WebTransport (both drafts) and HTTP
/// Datagrams; all zero/false by default.
public struct H3WebTransportSettings: Sendable, Equatable {
    /// SETTINGS_H3_DATAGRAM = 1 (either codepoint).
    public var h3Datagram = false
    /// SETTINGS_ENABLE_WEBTRANSPORT = 1: speaks draft-02.
    public var enableWebTransportDraft02 = false
    /// SETTINGS_WT_ENABLED ≠ 0: speaks the current draft (webtransport-h3).
    public var wtEnabled = false
    public var initialMaxStreamsUni: UInt64 = 0
    public var initialMaxStreamsBidi: UInt64 = 0
    public var initialMaxData: UInt64 = 0
    /// A WT_MAX_SESSIONS value of an earlier draft, if sent.
    public var maxSessions: UInt64?

    public init() {}

    /// draft-ietf-webtrans-http3 §5.1: flow control is on when both sides
    /// send at least one non-zero initial limit; this says whether this side did.
    public var offersFlowControl: Bool { initialMaxStreamsUni != 0 || initialMaxStreamsBidi != 0 || initialMaxData != 0 }
}

/// One side's settings, at their defaults until a SETTINGS frame arrives.
public struct H3Settings: Sendable, Equatable {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    public var qpackMaxTableCapacity: UInt64 = 0
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    public var qpackBlockedStreams: UInt64 = 0
    /// SETTINGS_MAX_FIELD_SECTION_SIZE; nil is the default, unlimited.
    public var maxFieldSectionSize: UInt64?
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL = 1.
    public var enableConnectProtocol = false
    /// WebTransport and HTTP Datagram settings.
    public var webTransport = H3WebTransportSettings()

    public init(qpackMaxTableCapacity: UInt64 = 0, qpackBlockedStreams: UInt64 = 0,
                maxFieldSectionSize: UInt64? = nil, enableConnectProtocol: Bool = false) {
        self.qpackMaxTableCapacity = qpackMaxTableCapacity
        self.qpackBlockedStreams = qpackBlockedStreams
        self.maxFieldSectionSize = maxFieldSectionSize
        self.enableConnectProtocol = enableConnectProtocol
    }

    /// Decodes and validates a SETTINGS payload (the frame header removed).
    public static func decode(_ payload: UnsafeRawBufferPointer) throws(H3Error) -> H3Settings {
        var s = H3Settings()
        var seen: [UInt64] = []
        var i = 0
        while i < payload.count {
            guard let (id, n) = QUICVarInt.decode(payload, at: i) else { throw .framePayloadMismatch }
            i += n
            guard let (value, m) = QUICVarInt.decode(payload, at: i) else { throw .framePayloadMismatch }
            i += m
            // Payloads are bounded (H3FrameReader.Limits), so a linear scan stays small.
            guard !seen.contains(id) else { throw .duplicateSetting }
            seen.append(id)
            guard !H3SettingID.isHTTP2Only(id) else { throw .http2Setting }
            switch id {
            case H3SettingID.qpackMaxTableCapacity: s.qpackMaxTableCapacity = value
            case H3SettingID.qpackBlockedStreams: s.qpackBlockedStreams = value
            case H3SettingID.maxFieldSectionSize: s.maxFieldSectionSize = value
            case H3SettingID.enableConnectProtocol:
                guard value <= 1 else { throw .invalidSettingValue }
                s.enableConnectProtocol = value == 1
            case H3SettingID.h3Datagram, H3SettingID.h3DatagramDraft04:
                // RFC 9297 §2.1.1: "Any value other than 0 or 1 MUST be
                // treated as a connection error of type H3_SETTINGS_ERROR."
                guard value <= 1 else { throw .invalidSettingValue }
                s.webTransport.h3Datagram = s.webTransport.h3Datagram || value == 1
            case H3SettingID.enableWebTransportDraft02:
                // draft-02 §3.1: "an endpoint that receives a value other
                // than "0" or "1" MUST close the connection with the
                // H3_SETTINGS_ERROR error code".
                guard value <= 1 else { throw .invalidSettingValue }
                s.webTransport.enableWebTransportDraft02 = value == 1
            case H3SettingID.wtEnabled:
                // §3.1 makes values above 1 an error for clients only; a
                // server reads any non-zero value as support.
                s.webTransport.wtEnabled = value != 0
            case H3SettingID.wtInitialMaxStreamsUni: s.webTransport.initialMaxStreamsUni = value
            case H3SettingID.wtInitialMaxStreamsBidi: s.webTransport.initialMaxStreamsBidi = value
            case H3SettingID.wtInitialMaxData: s.webTransport.initialMaxData = value
            case H3SettingID.wtMaxSessionsDraft07, H3SettingID.wtMaxSessionsDraft12: s.webTransport.maxSessions = value
            default: break  // unknown or reserved: ignored
            }
        }
        return s
    }

    /// The payload announcing these settings: every non-default value, then
    /// the reserved identifier `grease` (§7.2.4.1 "Endpoints SHOULD include
    /// at least one such setting") with `greaseValue`, if given.
    public func encodedPayload(grease: UInt64? = nil, greaseValue: UInt64 = 0) -> [UInt8] {
        var out: [UInt8] = []
        func put(_ id: UInt64, _ v: UInt64) {
            QUICVarInt.append(id, to: &out)
            QUICVarInt.append(v, to: &out)
        }
        if qpackMaxTableCapacity != 0 { put(H3SettingID.qpackMaxTableCapacity, qpackMaxTableCapacity) }
        if let maxFieldSectionSize { put(H3SettingID.maxFieldSectionSize, maxFieldSectionSize) }
        if qpackBlockedStreams != 0 { put(H3SettingID.qpackBlockedStreams, qpackBlockedStreams) }
        if enableConnectProtocol { put(H3SettingID.enableConnectProtocol, 1) }
        let wt = webTransport
        if wt.h3Datagram {
            put(H3SettingID.h3Datagram, 1)
            put(H3SettingID.h3DatagramDraft04, 1)
        }
        if wt.enableWebTransportDraft02 { put(H3SettingID.enableWebTransportDraft02, 1) }
        if wt.wtEnabled { put(H3SettingID.wtEnabled, 1) }
        if wt.initialMaxStreamsUni != 0 { put(H3SettingID.wtInitialMaxStreamsUni, wt.initialMaxStreamsUni) }
        if wt.initialMaxStreamsBidi != 0 { put(H3SettingID.wtInitialMaxStreamsBidi, wt.initialMaxStreamsBidi) }
        if wt.initialMaxData != 0 { put(H3SettingID.wtInitialMaxData, wt.initialMaxData) }
        if let n = wt.maxSessions { put(H3SettingID.wtMaxSessionsDraft12, n) }
        if let grease {
            precondition(H3Grease.isReserved(grease), "grease setting must be 0x1f * N + 0x21")
            put(grease, greaseValue)
        }
        return out
    }
}
