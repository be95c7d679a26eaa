// Encoding transport parameters (RFC 9000 §18), size first, write once.
// Parameters equal to their default are left out; a greased parameter
// (§18.1, id 31 * N + 27) can be added so peers keep ignoring unknown ones.

extension TransportParameters {
    public func encodedSize(greaseID: UInt64? = nil) -> Int {
        var n = 0
        forEachParameter(greaseID: greaseID) { id, length, _ in
            n += VarInt.encodedLength(id) + VarInt.encodedLength(UInt64(length)) + length
        }
        return n
    }

    /// Writes the parameters and returns the bytes written.
    @discardableResult
    public func encode(greaseID: UInt64? = nil, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(greaseID.map { ID.isReserved($0) } ?? true, "grease IDs are 31 * N + 27")
        var w = WireWriter(out, size: encodedSize(greaseID: greaseID))
        forEachParameter(greaseID: greaseID) { id, length, value in
            w.varint(id)
            w.varint(UInt64(length))
            value(&w)
        }
        return w.finish()
    }

    /// Calls `body` with (id, value length, value writer) for each parameter to send.
    private func forEachParameter(greaseID: UInt64?, _ body: (UInt64, Int, (inout WireWriter) -> Void) -> Void) {
        func integer(_ id: UInt64, _ value: UInt64, default d: UInt64) {
            if value != d { body(id, VarInt.encodedLength(value), { $0.varint(value) }) }
        }
        func connectionID(_ id: UInt64, _ value: ConnectionID?) {
            if let value { body(id, value.count, { $0.bytes(value) }) }
        }
        connectionID(ID.originalDestinationConnectionID, originalDestinationConnectionID)
        integer(ID.maxIdleTimeout, maxIdleTimeout, default: 0)
        if let token = statelessResetToken {
            body(ID.statelessResetToken, 16, { $0.uint64(token.high); $0.uint64(token.low) })
        }
        integer(ID.maxUDPPayloadSize, maxUDPPayloadSize, default: 65527)
        integer(ID.initialMaxData, initialMaxData, default: 0)
        integer(ID.initialMaxStreamDataBidiLocal, initialMaxStreamDataBidiLocal, default: 0)
        integer(ID.initialMaxStreamDataBidiRemote, initialMaxStreamDataBidiRemote, default: 0)
        integer(ID.initialMaxStreamDataUni, initialMaxStreamDataUni, default: 0)
        integer(ID.initialMaxStreamsBidi, initialMaxStreamsBidi, default: 0)
        integer(ID.initialMaxStreamsUni, initialMaxStreamsUni, default: 0)
        integer(ID.ackDelayExponent, ackDelayExponent, default: 3)
        integer(ID.maxAckDelay, maxAckDelay, default: 25)
        if disableActiveMigration { body(ID.disableActiveMigration, 0, { _ in }) }
        if let a = preferredAddress {
            body(ID.preferredAddress, a.encodedLength, { w in
                w.uint32(a.ipv4Address)
                w.uint16(a.ipv4Port)
                w.uint64(a.ipv6Address.high)
                w.uint64(a.ipv6Address.low)
                w.uint16(a.ipv6Port)
                w.connectionID(a.connectionID)
                w.uint64(a.statelessResetToken.high)
                w.uint64(a.statelessResetToken.low)
            })
        }
        integer(ID.activeConnectionIDLimit, activeConnectionIDLimit, default: 2)
        connectionID(ID.initialSourceConnectionID, initialSourceConnectionID)
        connectionID(ID.retrySourceConnectionID, retrySourceConnectionID)
        if let info = versionInformation {
            body(ID.versionInformation, 4 * (1 + info.availableVersions.count), { w in
                w.uint32(info.chosenVersion.rawValue)
                for v in info.availableVersions { w.uint32(v.rawValue) }
            })
        }
        if let size = maxDatagramFrameSize { body(ID.maxDatagramFrameSize, VarInt.encodedLength(size), { $0.varint(size) }) }
        if let delay = minAckDelay { body(ID.minAckDelay, VarInt.encodedLength(delay), { $0.varint(delay) }) }
        if resetStreamAt { body(ID.resetStreamAt, 0, { _ in }) }
        if let greaseID { body(greaseID, 0, { _ in }) }
    }
}
