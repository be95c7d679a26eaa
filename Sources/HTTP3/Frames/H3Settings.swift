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
        if let grease {
            precondition(H3Grease.isReserved(grease), "grease setting must be 0x1f * N + 0x21")
            put(grease, greaseValue)
        }
        return out
    }
}
