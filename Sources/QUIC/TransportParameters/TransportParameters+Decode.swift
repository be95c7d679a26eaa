// Decoding and validating transport parameters (RFC 9000 §18, §7.3).
//
// Every violation is a TRANSPORT_PARAMETER_ERROR (§7.4: "An endpoint MUST
// treat receipt of a transport parameter with an invalid value as a
// connection error of type TRANSPORT_PARAMETER_ERROR"). Unknown parameters,
// greased ones included, are skipped (§7.4.2: "An endpoint MUST ignore
// transport parameters that it does not support"). Duplicates of the
// parameters we know are refused (§18: "An endpoint SHOULD treat receipt of
// duplicate transport parameters as a connection error"); duplicates of
// unknown ones cannot be told apart without a set per connection, and are
// ignored with them.

extension TransportParameters {
    /// Decodes the extension body `bytes`, sent by `sender`.
    public static func decode(_ bytes: UnsafeRawBufferPointer, sentBy sender: EndpointRole) throws(QUICError) -> TransportParameters {
        var p = TransportParameters()
        var r = WireReader(bytes, truncated: .parametersTruncated)
        var seen: UInt64 = 0  // bit n: known parameter n (IDs ≤ 0x20) seen
        while !r.isAtEnd {
            let id = try r.varint()
            let value = try r.span(try r.varint())
            if id <= 0x20 {
                let bit: UInt64 = 1 << id
                if seen & bit != 0 && p.isKnown(id) { throw .duplicateParameter }
                seen |= bit
            }
            var v = WireReader(bytes, from: value.start, to: value.end, truncated: .parameterMalformed)
            try p.apply(id, &v, sender)
            guard v.isAtEnd else { throw .parameterMalformed }
        }
        // §7.3: initial_source_connection_id from both; the server's
        // original_destination_connection_id.
        guard p.initialSourceConnectionID != nil else { throw .missingParameter }
        if sender == .server && p.originalDestinationConnectionID == nil { throw .missingParameter }
        // draft-ietf-quic-ack-frequency §3: "If an endpoint receives a
        // min_ack_delay that is greater than its max_ack_delay, it MUST treat
        // this as a connection error of type TRANSPORT_PARAMETER_ERROR"
        // (µs against ms).
        if let minimum = p.minAckDelay, minimum > p.maxAckDelay * 1000 { throw .parameterOutOfRange }
        return p
    }

    private func isKnown(_ id: UInt64) -> Bool { id <= 0x11 || id == 0x20 }

    private mutating func apply(_ id: UInt64, _ v: inout WireReader, _ sender: EndpointRole) throws(QUICError) {
        typealias ID = TransportParameters.ID
        switch id {
        case ID.originalDestinationConnectionID:
            try serverOnly(sender)
            originalDestinationConnectionID = try Self.connectionID(&v)
        case ID.maxIdleTimeout: maxIdleTimeout = try v.varint()
        case ID.statelessResetToken:
            try serverOnly(sender)
            statelessResetToken = StatelessResetToken(v.bytes.slice(try v.span(16)))
        case ID.maxUDPPayloadSize:
            maxUDPPayloadSize = try v.varint()
            guard maxUDPPayloadSize >= Self.minUDPPayloadSize else { throw .parameterOutOfRange }
        case ID.initialMaxData: initialMaxData = try v.varint()
        case ID.initialMaxStreamDataBidiLocal: initialMaxStreamDataBidiLocal = try v.varint()
        case ID.initialMaxStreamDataBidiRemote: initialMaxStreamDataBidiRemote = try v.varint()
        case ID.initialMaxStreamDataUni: initialMaxStreamDataUni = try v.varint()
        case ID.initialMaxStreamsBidi, ID.initialMaxStreamsUni:
            // §18.2: "If this transport parameter is received with a value
            // greater than 2^60 ... TRANSPORT_PARAMETER_ERROR" (via §19.11).
            let n = try v.varint()
            guard n <= Frame.maxStreamCount else { throw .parameterOutOfRange }
            if id == ID.initialMaxStreamsBidi { initialMaxStreamsBidi = n } else { initialMaxStreamsUni = n }
        case ID.ackDelayExponent:
            ackDelayExponent = try v.varint()
            guard ackDelayExponent <= Self.maxAckDelayExponent else { throw .parameterOutOfRange }
        case ID.maxAckDelay:
            maxAckDelay = try v.varint()
            guard maxAckDelay < Self.maxAckDelayLimit else { throw .parameterOutOfRange }
        case ID.disableActiveMigration:
            // A zero-length value; anything in it is left unread → malformed.
            disableActiveMigration = true
        case ID.preferredAddress:
            try serverOnly(sender)
            preferredAddress = try Self.preferredAddress(&v)
        case ID.activeConnectionIDLimit:
            activeConnectionIDLimit = try v.varint()
            guard activeConnectionIDLimit >= Self.minActiveConnectionIDLimit else { throw .parameterOutOfRange }
        case ID.initialSourceConnectionID:
            initialSourceConnectionID = try Self.connectionID(&v)
        case ID.retrySourceConnectionID:
            try serverOnly(sender)
            retrySourceConnectionID = try Self.connectionID(&v)
        case ID.versionInformation:
            // RFC 9368 §3: Chosen Version (32), Available Versions (32) ...;
            // "a Chosen Version of 0" is invalid.
            guard v.remaining >= 4 && v.remaining % 4 == 0 else { throw .parameterMalformed }
            let chosen = QUICVersion(rawValue: readUInt32(v.bytes, at: try v.span(4).start))
            guard chosen != .negotiation else { throw .parameterOutOfRange }
            var available: [QUICVersion] = []
            while !v.isAtEnd { available.append(QUICVersion(rawValue: readUInt32(v.bytes, at: try v.span(4).start))) }
            versionInformation = VersionInformation(chosenVersion: chosen, availableVersions: available)
        case ID.maxDatagramFrameSize:
            maxDatagramFrameSize = try v.varint()
        case ID.minAckDelay:
            // draft-ietf-quic-ack-frequency §3: TRANSPORT_PARAMETER_ERROR for
            // a repeat or a value of 2^24 or more (the check against
            // max_ack_delay waits until every parameter is read).
            guard minAckDelay == nil else { throw .duplicateParameter }
            let value = try v.varint()
            guard value < Self.minAckDelayLimit else { throw .parameterOutOfRange }
            minAckDelay = value
        case ID.resetStreamAt:
            // draft-ietf-quic-reliable-stream-reset §3: "The reset_stream_at
            // transport parameter is empty"; a value (left unread here) is
            // malformed, a repeat a duplicate (§18 of RFC 9000).
            guard !resetStreamAt else { throw .duplicateParameter }
            resetStreamAt = true
        default:
            _ = v.rest()  // unknown or reserved: ignored (§7.4.2, §18.1)
        }
    }

    /// §18.2: "A server MUST treat receipt of any of these transport
    /// parameters as a connection error of type TRANSPORT_PARAMETER_ERROR."
    private func serverOnly(_ sender: EndpointRole) throws(QUICError) {
        guard sender == .server else { throw .serverOnlyParameter }
    }

    private static func connectionID(_ v: inout WireReader) throws(QUICError) -> ConnectionID {
        guard v.remaining <= ConnectionID.maxLength else { throw .parameterOutOfRange }
        return ConnectionID(v.bytes.slice(v.rest()))!
    }

    private static func preferredAddress(_ v: inout WireReader) throws(QUICError) -> PreferredAddress {
        let v4 = UInt32(try v.uint16()) << 16 | UInt32(try v.uint16())
        let v4Port = try v.uint16()
        let v6High = try v.uint64()
        let v6Low = try v.uint64()
        let v6Port = try v.uint16()
        let length = Int(try v.uint8())
        // "a server MUST NOT include a zero-length connection ID in this
        // transport parameter. A client MUST treat a violation of these
        // requirements as a connection error of type TRANSPORT_PARAMETER_ERROR."
        guard length >= 1 && length <= ConnectionID.maxLength else { throw .parameterOutOfRange }
        let id = ConnectionID(v.bytes.slice(try v.span(length)))!
        let token = StatelessResetToken(v.bytes.slice(try v.span(16)))
        return PreferredAddress(ipv4Address: v4, ipv4Port: v4Port, ipv6Address: (v6High, v6Low), ipv6Port: v6Port,
                                connectionID: id, statelessResetToken: token)
    }
}

extension QUICError {
    public static let parametersTruncated = QUICError(code: .transportParameterError, reason: "transport parameters truncated")
    public static let parameterMalformed = QUICError(code: .transportParameterError, reason: "transport parameter value malformed")
    public static let parameterOutOfRange = QUICError(code: .transportParameterError, reason: "transport parameter value out of range")
    public static let duplicateParameter = QUICError(code: .transportParameterError, reason: "duplicate transport parameter")
    public static let serverOnlyParameter = QUICError(code: .transportParameterError, reason: "client sent a server-only transport parameter")
    public static let missingParameter = QUICError(code: .transportParameterError, reason: "required transport parameter missing")
}
