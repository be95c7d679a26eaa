// QUIC transport parameters (RFC 9000 §7.4, §18; RFC 9221 §3; RFC 9368 §3).
//
// They travel inside TLS (the quic_transport_parameters extension, RFC
// 9001 §8.2) as a sequence of (id varint, length varint, value) triples.
// This struct holds them with the RFC's defaults for absent ones; decoding
// (TransportParameters+Decode.swift) validates every rule of §18.2 and
// encoding writes only what differs from the default. The per-connection
// checks that compare values with packets (§7.3: the connection IDs match
// what was seen on the wire) belong to the connection.

/// Which endpoint sent a set of parameters.
public enum EndpointRole: Sendable, Equatable {
    case client, server
}

/// The preferred_address parameter (§18.2, §9.6). Addresses are in network
/// byte order, as on the wire.
public struct PreferredAddress: Equatable, Sendable {
    public var ipv4Address: UInt32
    public var ipv4Port: UInt16
    public var ipv6Address: (high: UInt64, low: UInt64)
    public var ipv6Port: UInt16
    public var connectionID: ConnectionID
    public var statelessResetToken: StatelessResetToken

    public init(ipv4Address: UInt32, ipv4Port: UInt16, ipv6Address: (high: UInt64, low: UInt64), ipv6Port: UInt16,
                connectionID: ConnectionID, statelessResetToken: StatelessResetToken) {
        self.ipv4Address = ipv4Address
        self.ipv4Port = ipv4Port
        self.ipv6Address = ipv6Address
        self.ipv6Port = ipv6Port
        self.connectionID = connectionID
        self.statelessResetToken = statelessResetToken
    }

    public static func == (a: PreferredAddress, b: PreferredAddress) -> Bool {
        a.ipv4Address == b.ipv4Address && a.ipv4Port == b.ipv4Port && a.ipv6Address.high == b.ipv6Address.high
            && a.ipv6Address.low == b.ipv6Address.low && a.ipv6Port == b.ipv6Port && a.connectionID == b.connectionID
            && a.statelessResetToken == b.statelessResetToken
    }

    /// 4 + 2 + 16 + 2 + 1 + ID + 16.
    var encodedLength: Int { 41 + connectionID.count }
}

/// version_information (RFC 9368 §3): the version in use and the versions
/// the sender supports. RFC 9369 §4 requires it of endpoints that speak v2.
public struct VersionInformation: Equatable, Sendable {
    public var chosenVersion: QUICVersion
    public var availableVersions: [QUICVersion]

    public init(chosenVersion: QUICVersion, availableVersions: [QUICVersion]) {
        self.chosenVersion = chosenVersion
        self.availableVersions = availableVersions
    }
}

public struct TransportParameters: Equatable, Sendable {
    // Parameter IDs (§18.2 Table 6 order; RFC 9221 §3; RFC 9368 §3).
    public enum ID {
        public static let originalDestinationConnectionID: UInt64 = 0x00
        public static let maxIdleTimeout: UInt64 = 0x01
        public static let statelessResetToken: UInt64 = 0x02
        public static let maxUDPPayloadSize: UInt64 = 0x03
        public static let initialMaxData: UInt64 = 0x04
        public static let initialMaxStreamDataBidiLocal: UInt64 = 0x05
        public static let initialMaxStreamDataBidiRemote: UInt64 = 0x06
        public static let initialMaxStreamDataUni: UInt64 = 0x07
        public static let initialMaxStreamsBidi: UInt64 = 0x08
        public static let initialMaxStreamsUni: UInt64 = 0x09
        public static let ackDelayExponent: UInt64 = 0x0a
        public static let maxAckDelay: UInt64 = 0x0b
        public static let disableActiveMigration: UInt64 = 0x0c
        public static let preferredAddress: UInt64 = 0x0d
        public static let activeConnectionIDLimit: UInt64 = 0x0e
        public static let initialSourceConnectionID: UInt64 = 0x0f
        public static let retrySourceConnectionID: UInt64 = 0x10
        public static let versionInformation: UInt64 = 0x11
        public static let maxDatagramFrameSize: UInt64 = 0x20
        /// draft-ietf-quic-ack-frequency §3.
        public static let minAckDelay: UInt64 = 0xff04de1b
        /// draft-ietf-quic-reliable-stream-reset §3.
        public static let resetStreamAt: UInt64 = 0x17f7586d2cb571

        /// §18.1: "Transport parameters with an identifier of the form
        /// 31 * N + 27 for integer values of N are reserved to exercise the
        /// requirement that unknown transport parameters be ignored."
        public static func isReserved(_ id: UInt64) -> Bool { id >= 27 && (id - 27) % 31 == 0 }
    }

    // Limits of §18.2.
    /// max_udp_payload_size: "Values below 1200 are invalid."
    public static let minUDPPayloadSize: UInt64 = 1200
    /// ack_delay_exponent: "Values above 20 are invalid."
    public static let maxAckDelayExponent: UInt64 = 20
    /// max_ack_delay: "Values of 2^14 or greater are invalid."
    public static let maxAckDelayLimit: UInt64 = 1 << 14
    /// active_connection_id_limit: "MUST be at least 2."
    public static let minActiveConnectionIDLimit: UInt64 = 2

    /// Milliseconds; 0: no idle timeout.
    public var maxIdleTimeout: UInt64 = 0
    public var maxUDPPayloadSize: UInt64 = 65527
    public var initialMaxData: UInt64 = 0
    public var initialMaxStreamDataBidiLocal: UInt64 = 0
    public var initialMaxStreamDataBidiRemote: UInt64 = 0
    public var initialMaxStreamDataUni: UInt64 = 0
    public var initialMaxStreamsBidi: UInt64 = 0
    public var initialMaxStreamsUni: UInt64 = 0
    public var ackDelayExponent: UInt64 = 3
    /// Milliseconds.
    public var maxAckDelay: UInt64 = 25
    public var disableActiveMigration = false
    public var activeConnectionIDLimit: UInt64 = 2
    public var initialSourceConnectionID: ConnectionID?
    /// Server only.
    public var originalDestinationConnectionID: ConnectionID?
    /// Server only.
    public var retrySourceConnectionID: ConnectionID?
    /// Server only.
    public var statelessResetToken: StatelessResetToken?
    /// Server only.
    public var preferredAddress: PreferredAddress?
    /// RFC 9221: nil when DATAGRAM is not supported.
    public var maxDatagramFrameSize: UInt64?
    public var versionInformation: VersionInformation?
    /// draft-ietf-quic-ack-frequency §3: the smallest ACK delay, in
    /// microseconds, the sender can honour; present means it accepts
    /// ACK_FREQUENCY and IMMEDIATE_ACK frames. nil: not sent.
    public var minAckDelay: UInt64?
    /// §3: "Values of 2^24 or greater are invalid".
    public static let minAckDelayLimit: UInt64 = 1 << 24
    /// draft-ietf-quic-reliable-stream-reset §3: the empty reset_stream_at
    /// parameter; present means the sender accepts RESET_STREAM_AT frames.
    public var resetStreamAt = false

    public init() {}
}
