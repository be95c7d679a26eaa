// Frame encoders (RFC 9000 §19; RFC 9221 §4), size first, write once.
//
// Each frame has a `…Size` function giving its exact encoded length and an
// `encode…` function writing it into a caller buffer of at least that size
// and returning the bytes written (STYLE §2). Integers use their shortest
// encoding. Variable data (STREAM, CRYPTO, DATAGRAM payloads, tokens,
// reason phrases) is copied from the caller's bytes; a caller that produces
// it in place can write the frame's prefix with the `…HeaderSize`/`…Header`
// pair and put the data after it.

import Core

public enum FrameEncoder {
    @inlinable static func v(_ x: UInt64) -> Int { VarInt.encodedLength(x) }

    // MARK: sizes

    public static let pingSize = 1
    public static let handshakeDoneSize = 1
    public static let pathFrameSize = 9

    public static func ackSize<R: Collection>(ranges: R, ackDelay: UInt64, ecn: ECNCounts? = nil) -> Int
    where R.Element == ClosedRange<UInt64> {
        ackSize(ranges: AckRangeView(closedDescending: ranges), ackDelay: ackDelay, ecn: ecn)
    }

    /// As above, for ranges viewed in place (what a connection sends).
    public static func ackSize(ranges: AckRangeView, ackDelay: UInt64, ecn: ECNCounts? = nil) -> Int {
        precondition(ranges.count > 0, "an ACK frame acknowledges at least one range")
        let first = ranges[0]
        var n = 1 + v(first.upperBound) + v(ackDelay) + v(UInt64(ranges.count - 1)) + v(first.upperBound - first.lowerBound)
        var smallest = first.lowerBound
        for i in 1..<ranges.count {
            let r = ranges[i]
            precondition(r.upperBound + 2 <= smallest, "ACK ranges must be descending and separated by a gap")
            n += v(smallest - r.upperBound - 2) + v(r.upperBound - r.lowerBound)
            smallest = r.lowerBound
        }
        if let ecn { n += v(ecn.ect0) + v(ecn.ect1) + v(ecn.ce) }
        return n
    }

    public static func resetStreamSize(streamID: UInt64, errorCode: UInt64, finalSize: UInt64) -> Int {
        1 + v(streamID) + v(errorCode) + v(finalSize)
    }

    public static func stopSendingSize(streamID: UInt64, errorCode: UInt64) -> Int { 1 + v(streamID) + v(errorCode) }

    public static func cryptoHeaderSize(offset: UInt64, dataLength: Int) -> Int { 1 + v(offset) + v(UInt64(dataLength)) }
    public static func cryptoSize(offset: UInt64, dataLength: Int) -> Int { cryptoHeaderSize(offset: offset, dataLength: dataLength) + dataLength }

    public static func newTokenSize(tokenLength: Int) -> Int { 1 + v(UInt64(tokenLength)) + tokenLength }

    /// `explicitLength: false` leaves LEN clear: the data runs to the end of
    /// the packet, so the frame must be the packet's last.
    public static func streamHeaderSize(streamID: UInt64, offset: UInt64, dataLength: Int, explicitLength: Bool = true) -> Int {
        1 + v(streamID) + (offset > 0 ? v(offset) : 0) + (explicitLength ? v(UInt64(dataLength)) : 0)
    }

    public static func streamSize(streamID: UInt64, offset: UInt64, dataLength: Int, explicitLength: Bool = true) -> Int {
        streamHeaderSize(streamID: streamID, offset: offset, dataLength: dataLength, explicitLength: explicitLength) + dataLength
    }

    /// MAX_DATA and DATA_BLOCKED.
    public static func connectionLimitSize(_ value: UInt64) -> Int { 1 + v(value) }
    /// MAX_STREAM_DATA and STREAM_DATA_BLOCKED.
    public static func streamLimitSize(streamID: UInt64, _ value: UInt64) -> Int { 1 + v(streamID) + v(value) }
    /// MAX_STREAMS and STREAMS_BLOCKED.
    public static func streamCountSize(_ value: UInt64) -> Int { 1 + v(value) }

    public static func newConnectionIDSize(sequenceNumber: UInt64, retirePriorTo: UInt64, connectionID: ConnectionID) -> Int {
        1 + v(sequenceNumber) + v(retirePriorTo) + 1 + connectionID.count + 16
    }

    public static func retireConnectionIDSize(sequenceNumber: UInt64) -> Int { 1 + v(sequenceNumber) }

    public static func connectionCloseSize(errorCode: UInt64, frameType: UInt64?, reasonLength: Int) -> Int {
        1 + v(errorCode) + (frameType.map { v($0) } ?? 0) + v(UInt64(reasonLength)) + reasonLength
    }

    public static func datagramSize(dataLength: Int, explicitLength: Bool = true) -> Int {
        1 + (explicitLength ? v(UInt64(dataLength)) : 0) + dataLength
    }

    // MARK: encoders

    /// `count` PADDING frames (zero bytes).
    @discardableResult
    public static func encodePadding(count: Int, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: count)
        w.zeros(count)
        return w.finish()
    }

    @discardableResult
    public static func encodePing(into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: pingSize)
        w.uint8(UInt8(FrameType.ping))
        return w.finish()
    }

    @discardableResult
    public static func encodeHandshakeDone(into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: handshakeDoneSize)
        w.uint8(UInt8(FrameType.handshakeDone))
        return w.finish()
    }

    /// ACK (or ACK_ECN with `ecn`) of `ranges`, largest first, disjoint and
    /// non-adjacent (§19.3.1). `ackDelay` is the field value: microseconds
    /// already divided by 2^ack_delay_exponent (§19.3).
    @discardableResult
    public static func encodeAck<R: Collection>(ranges: R, ackDelay: UInt64, ecn: ECNCounts? = nil,
                                                into out: UnsafeMutableRawBufferPointer) -> Int
    where R.Element == ClosedRange<UInt64> {
        encodeAck(ranges: AckRangeView(closedDescending: ranges), ackDelay: ackDelay, ecn: ecn, into: out)
    }

    /// As above, for ranges viewed in place (what a connection sends).
    @discardableResult
    public static func encodeAck(ranges: AckRangeView, ackDelay: UInt64, ecn: ECNCounts? = nil,
                                 into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = ackSize(ranges: ranges, ackDelay: ackDelay, ecn: ecn)
        var w = WireWriter(out, size: n)
        let first = ranges[0]
        w.uint8(UInt8(ecn == nil ? FrameType.ack : FrameType.ackECN))
        w.varint(first.upperBound)
        w.varint(ackDelay)
        w.varint(UInt64(ranges.count - 1))
        w.varint(first.upperBound - first.lowerBound)
        var smallest = first.lowerBound
        for i in 1..<ranges.count {
            let r = ranges[i]
            w.varint(smallest - r.upperBound - 2)
            w.varint(r.upperBound - r.lowerBound)
            smallest = r.lowerBound
        }
        if let ecn {
            w.varint(ecn.ect0)
            w.varint(ecn.ect1)
            w.varint(ecn.ce)
        }
        return w.finish()
    }

    @discardableResult
    public static func encodeResetStream(streamID: UInt64, errorCode: UInt64, finalSize: UInt64,
                                         into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: resetStreamSize(streamID: streamID, errorCode: errorCode, finalSize: finalSize))
        w.uint8(UInt8(FrameType.resetStream))
        w.varint(streamID)
        w.varint(errorCode)
        w.varint(finalSize)
        return w.finish()
    }

    @discardableResult
    public static func encodeStopSending(streamID: UInt64, errorCode: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: stopSendingSize(streamID: streamID, errorCode: errorCode))
        w.uint8(UInt8(FrameType.stopSending))
        w.varint(streamID)
        w.varint(errorCode)
        return w.finish()
    }

    /// The CRYPTO frame's type, offset and length; `dataLength` bytes follow.
    @discardableResult
    public static func encodeCryptoHeader(offset: UInt64, dataLength: Int, into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: cryptoHeaderSize(offset: offset, dataLength: dataLength))
        w.uint8(UInt8(FrameType.crypto))
        w.varint(offset)
        w.varint(UInt64(dataLength))
        return w.finish()
    }

    @discardableResult
    public static func encodeCrypto(offset: UInt64, data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        let h = encodeCryptoHeader(offset: offset, dataLength: data.count, into: out)
        return h + copy(data, into: out, at: h)
    }

    @discardableResult
    public static func encodeNewToken(_ token: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(!token.isEmpty, "§19.7: a NEW_TOKEN token is never empty")
        var w = WireWriter(out, size: newTokenSize(tokenLength: token.count))
        w.uint8(UInt8(FrameType.newToken))
        w.varint(UInt64(token.count))
        w.bytes(token)
        return w.finish()
    }

    /// The STREAM frame's type (OFF when `offset > 0`, LEN when
    /// `explicitLength`, FIN when `fin`), stream ID, offset and length.
    @discardableResult
    public static func encodeStreamHeader(streamID: UInt64, offset: UInt64, dataLength: Int, fin: Bool,
                                          explicitLength: Bool = true, into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = streamHeaderSize(streamID: streamID, offset: offset, dataLength: dataLength, explicitLength: explicitLength)
        var w = WireWriter(out, size: n)
        var type = FrameType.stream
        if offset > 0 { type |= 0x04 }
        if explicitLength { type |= 0x02 }
        if fin { type |= 0x01 }
        w.uint8(UInt8(type))
        w.varint(streamID)
        if offset > 0 { w.varint(offset) }
        if explicitLength { w.varint(UInt64(dataLength)) }
        return w.finish()
    }

    @discardableResult
    public static func encodeStream(streamID: UInt64, offset: UInt64, data: UnsafeRawBufferPointer, fin: Bool,
                                    explicitLength: Bool = true, into out: UnsafeMutableRawBufferPointer) -> Int {
        let h = encodeStreamHeader(streamID: streamID, offset: offset, dataLength: data.count, fin: fin,
                                   explicitLength: explicitLength, into: out)
        return h + copy(data, into: out, at: h)
    }

    @discardableResult
    public static func encodeMaxData(_ maximum: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodeOne(FrameType.maxData, maximum, out)
    }

    @discardableResult
    public static func encodeDataBlocked(_ limit: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodeOne(FrameType.dataBlocked, limit, out)
    }

    @discardableResult
    public static func encodeMaxStreamData(streamID: UInt64, maximum: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodeTwo(FrameType.maxStreamData, streamID, maximum, out)
    }

    @discardableResult
    public static func encodeStreamDataBlocked(streamID: UInt64, limit: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodeTwo(FrameType.streamDataBlocked, streamID, limit, out)
    }

    @discardableResult
    public static func encodeMaxStreams(bidirectional: Bool, limit: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(limit <= Frame.maxStreamCount)
        return encodeOne(bidirectional ? FrameType.maxStreamsBidi : FrameType.maxStreamsUni, limit, out)
    }

    @discardableResult
    public static func encodeStreamsBlocked(bidirectional: Bool, limit: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(limit <= Frame.maxStreamCount)
        return encodeOne(bidirectional ? FrameType.streamsBlockedBidi : FrameType.streamsBlockedUni, limit, out)
    }

    @discardableResult
    public static func encodeNewConnectionID(sequenceNumber: UInt64, retirePriorTo: UInt64, connectionID: ConnectionID,
                                             statelessResetToken: StatelessResetToken,
                                             into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(!connectionID.isEmpty && retirePriorTo <= sequenceNumber)
        var w = WireWriter(out, size: newConnectionIDSize(sequenceNumber: sequenceNumber, retirePriorTo: retirePriorTo,
                                                          connectionID: connectionID))
        w.uint8(UInt8(FrameType.newConnectionID))
        w.varint(sequenceNumber)
        w.varint(retirePriorTo)
        w.connectionID(connectionID)
        w.uint64(statelessResetToken.high)
        w.uint64(statelessResetToken.low)
        return w.finish()
    }

    @discardableResult
    public static func encodeRetireConnectionID(sequenceNumber: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodeOne(FrameType.retireConnectionID, sequenceNumber, out)
    }

    @discardableResult
    public static func encodePathChallenge(_ data: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodePath(FrameType.pathChallenge, data, out)
    }

    @discardableResult
    public static func encodePathResponse(_ data: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        encodePath(FrameType.pathResponse, data, out)
    }

    /// CONNECTION_CLOSE: type 0x1c with a transport `errorCode` and the
    /// offending `frameType`, or, when `frameType` is nil, type 0x1d with an
    /// application error code (§19.19).
    @discardableResult
    public static func encodeConnectionClose(errorCode: UInt64, frameType: UInt64?, reason: UnsafeRawBufferPointer,
                                             into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: connectionCloseSize(errorCode: errorCode, frameType: frameType, reasonLength: reason.count))
        w.uint8(UInt8(frameType == nil ? FrameType.applicationClose : FrameType.connectionClose))
        w.varint(errorCode)
        if let frameType { w.varint(frameType) }
        w.varint(UInt64(reason.count))
        w.bytes(reason)
        return w.finish()
    }

    /// CONNECTION_CLOSE (0x1c) for a connection error of ours: its code and
    /// the frame type that caused it (§10.2, §19.19).
    @discardableResult
    public static func encodeConnectionClose(_ error: QUICError, reason: UnsafeRawBufferPointer,
                                             into out: UnsafeMutableRawBufferPointer) -> Int {
        encodeConnectionClose(errorCode: error.code.rawValue, frameType: error.frameType, reason: reason, into: out)
    }

    @discardableResult
    public static func encodeDatagram(_ data: UnsafeRawBufferPointer, explicitLength: Bool = true,
                                      into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: datagramSize(dataLength: data.count, explicitLength: explicitLength))
        w.uint8(UInt8(explicitLength ? FrameType.datagramWithLength : FrameType.datagram))
        if explicitLength { w.varint(UInt64(data.count)) }
        w.bytes(data)
        return w.finish()
    }

    // MARK: helpers

    private static func encodeOne(_ type: UInt64, _ a: UInt64, _ out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: 1 + v(a))
        w.uint8(UInt8(type))
        w.varint(a)
        return w.finish()
    }

    private static func encodeTwo(_ type: UInt64, _ a: UInt64, _ b: UInt64, _ out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: 1 + v(a) + v(b))
        w.uint8(UInt8(type))
        w.varint(a)
        w.varint(b)
        return w.finish()
    }

    private static func encodePath(_ type: UInt64, _ data: UInt64, _ out: UnsafeMutableRawBufferPointer) -> Int {
        var w = WireWriter(out, size: pathFrameSize)
        w.uint8(UInt8(type))
        w.uint64(data)
        return w.finish()
    }

    private static func copy(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, at: Int) -> Int {
        precondition(out.count - at >= data.count, "buffer smaller than the frame's size function")
        if data.count > 0 { (out.baseAddress! + at).copyMemory(from: data.baseAddress!, byteCount: data.count) }
        return data.count
    }
}
