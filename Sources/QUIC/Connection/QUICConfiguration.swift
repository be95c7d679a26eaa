// What a QUIC server endpoint advertises and enforces (RFC 9000 §18.2
// transport parameters, §10.1 idle timeout, §14 datagram sizes). Values in
// nanoseconds are converted to the milliseconds of the wire when encoded.

import Core

public struct QUICConfiguration: Sendable {
    /// Idle timeout in ns (§10.1); 0 disables ours (the peer's still applies).
    public var maxIdleTimeout: Int64 = 30_000_000_000
    /// Connection receive window (initial_max_data); the limit moves up as
    /// the application reads.
    public var initialMaxData: UInt64 = 4 << 20
    /// Receive window of each request stream the client opens
    /// (initial_max_stream_data_bidi_remote).
    public var initialMaxStreamDataBidiRemote: UInt64 = 1 << 20
    /// Receive window of each unidirectional stream the client opens.
    public var initialMaxStreamDataUni: UInt64 = 64 << 10
    /// initial_max_stream_data_bidi_local: the receive window of the
    /// bidirectional streams we open (`openBidirectionalStream`); 0 while
    /// nothing opens them (HTTP/3 alone never does).
    public var initialMaxStreamDataBidiLocal: UInt64 = 0
    /// Concurrent client-initiated bidirectional streams.
    public var initialMaxStreamsBidi: UInt64 = 100
    /// Concurrent client-initiated unidirectional streams.
    public var initialMaxStreamsUni: UInt64 = 8
    /// How many bytes `write` accepts per stream beyond what is acknowledged.
    public var maxSendBufferPerStream: Int = 256 << 10
    /// How many of our connection IDs the peer may hold (≥ 2, §18.2).
    public var activeConnectionIDLimit: UInt64 = 4
    /// Our max_ack_delay in ns (§13.2.1), sent in milliseconds.
    public var maxAckDelay: Int64 = 25_000_000
    /// Our min_ack_delay in ns, sent in microseconds (draft-ietf-quic-ack-frequency
    /// §3): the peer may then tune our ACKs with ACK_FREQUENCY and IMMEDIATE_ACK.
    /// 1 ms: the worker's timer granularity. nil: not advertised.
    public var minAckDelay: Int64? = 1_000_000
    /// Our ack_delay_exponent (§18.2: ≤ 20).
    public var ackDelayExponent: UInt8 = 3
    /// The largest datagram we send: path MTU discovery (RFC 8899,
    /// PathMTUDiscovery.swift) searches from 1200 up to this (and the
    /// peer's max_udp_payload_size); 1200, the default here, disables it.
    public var maxUDPPayloadSize: Int = 1200
    /// The largest datagram we accept, advertised as max_udp_payload_size
    /// (§18.2: a limit on what the peer sends). 1472 fits a 1500-byte
    /// Ethernet MTU over IPv4 and the worker's 2048-byte receive slots.
    public var maxReceiveUDPPayloadSize: Int = 1472
    /// The congestion controller of new connections (RFC 9002 §7): CUBIC
    /// with HyStart++ (RFC 9438, RFC 9406) unless NewReno is asked for.
    public var congestionControl: CongestionAlgorithm = .cubic
    public var supportedVersions: [QUICVersion] = [.v1, .v2]
    /// 1-RTT packets sent under one key before the server starts a key
    /// update (RFC 9001 §6.1); 0: only when the AEAD's confidentiality limit
    /// requires it (§6.6), which caps this at half that limit anyway. 2^20
    /// (about 1.2 GB at 1,200 bytes) is an eighth of AES-GCM's 2^23.
    public var keyUpdateInterval: UInt64 = 1 << 20
    /// Tests only: AEAD limits replacing the suite's (RFC 9001 §6.6), so
    /// that crossing them takes a few packets.
    var aeadLimitsOverride: AEADLimits?
    /// RFC 9221 §3 max_datagram_frame_size: the largest DATAGRAM frame we
    /// accept (type, length and payload). nil: DATAGRAM frames are not
    /// negotiated, and one received is a PROTOCOL_VIOLATION.
    public var maxDatagramFrameSize: UInt64?
    /// Received datagrams the application has not read yet, and sent ones
    /// waiting for a packet: past either bound (count or bytes) a datagram
    /// is dropped and counted.
    public var maxQueuedDatagrams = 64
    public var maxQueuedDatagramBytes = 64 << 10

    /// Send the reset_stream_at transport parameter (draft-ietf-quic-
    /// reliable-stream-reset §3) and accept RESET_STREAM_AT frames. Off by
    /// default: only WebTransport needs reliable resets (draft-ietf-
    /// webtrans-http3 §3.1 requires the parameter), and HTTP/3 alone then
    /// shows peers exactly the parameters it did before.
    public var reliableStreamReset = false

    // Address validation and floods (§8.1, §10.3; QUICEndpoint).

    /// Every Initial without a valid token gets a Retry (§8.1.2).
    public var alwaysRetry = false
    /// Initials without a valid token get a Retry once this many
    /// connections are half-open (handshaking); a flood then costs no state.
    public var retryThreshold = 100
    /// The most half-open connections an endpoint keeps. Reaching it, an
    /// Initial without a valid token always gets a Retry, and one with a
    /// valid token (the address is proven) evicts the oldest half-open
    /// connection: memory stays bounded and a real client still gets in.
    public var maxHalfOpenConnections = 1000
    /// The most connections an endpoint keeps in all (handshaking, open,
    /// closing): --max-connections, as TCP connections have it. At the cap
    /// a new client's Initial is dropped unanswered; it retransmits, and
    /// gets in once a connection ends (RFC 9000 §5.2.2 allows refusing).
    public var maxConnections = 4096
    /// §8.1.3: send a NEW_TOKEN frame once the handshake completes.
    public var sendsNewToken = true
    /// §10.3: stateless resets sent per second at most (and in a burst),
    /// in answer to short-header packets for unknown connection IDs.
    public var statelessResetsPerSecond = 100
    /// §9, §18.2: when false, the transport parameters carry
    /// disable_active_migration (clients should not move on purpose; a
    /// NAT rebinding is still followed).
    public var allowsActiveMigration = true

    public init() {}

    /// The transport parameters this configuration advertises, before the
    /// per-connection ones (connection IDs, stateless reset token).
    var transportParameters: TransportParameters {
        var p = TransportParameters()
        p.maxIdleTimeout = UInt64(maxIdleTimeout / 1_000_000)
        p.maxUDPPayloadSize = UInt64(max(1200, maxReceiveUDPPayloadSize))
        p.initialMaxData = initialMaxData
        // 0 unless bidirectional streams of ours are used (WebTransport).
        p.initialMaxStreamDataBidiLocal = initialMaxStreamDataBidiLocal
        p.initialMaxStreamDataBidiRemote = initialMaxStreamDataBidiRemote
        p.initialMaxStreamDataUni = initialMaxStreamDataUni
        p.initialMaxStreamsBidi = initialMaxStreamsBidi
        p.initialMaxStreamsUni = initialMaxStreamsUni
        p.ackDelayExponent = UInt64(ackDelayExponent)
        p.maxAckDelay = UInt64(maxAckDelay / 1_000_000)
        p.activeConnectionIDLimit = max(2, activeConnectionIDLimit)
        p.maxDatagramFrameSize = maxDatagramFrameSize
        p.minAckDelay = minAckDelayMicroseconds
        p.resetStreamAt = reliableStreamReset
        // §18.2 disable_active_migration: we follow a client to a new
        // address (QUICConnection+Migration.swift) unless told not to
        // invite it; a NAT rebinding is followed either way (§9: the
        // parameter does not cover it).
        p.disableActiveMigration = !allowsActiveMigration
        return p
    }
}
