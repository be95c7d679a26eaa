// Re-encoding a decoded frame (tests and the fuzz target's round trip;
// the connection calls the specific encoders). Spans are read from
// `source`, the buffer the frame was decoded from. Integers are written in
// their shortest form, so the bytes can differ from a peer's non-minimal
// encoding while decoding back to the same frame.

import Core

extension Frame {
    public func encodedSize(source: UnsafeRawBufferPointer) -> Int {
        typealias E = FrameEncoder
        switch self {
        case .padding(let n): return n
        case .ping: return E.pingSize
        case .ack(let f): return E.ackSize(ranges: Array(f.ranges(in: source)), ackDelay: f.ackDelay, ecn: f.ecn)
        case .resetStream(let f): return E.resetStreamSize(streamID: f.streamID, errorCode: f.errorCode, finalSize: f.finalSize)
        case .resetStreamAt(let f): return E.resetStreamAtSize(f)
        case .stopSending(let f): return E.stopSendingSize(streamID: f.streamID, errorCode: f.errorCode)
        case .crypto(let f): return E.cryptoSize(offset: f.offset, dataLength: f.data.count)
        case .newToken(let t): return E.newTokenSize(tokenLength: t.count)
        case .stream(let f): return E.streamSize(streamID: f.streamID, offset: f.offset, dataLength: f.data.count, explicitLength: f.hasLength)
        case .maxData(let x), .dataBlocked(let x): return E.connectionLimitSize(x)
        case .maxStreamData(let f): return E.streamLimitSize(streamID: f.streamID, f.maximum)
        case .streamDataBlocked(let f): return E.streamLimitSize(streamID: f.streamID, f.limit)
        case .maxStreams(let f), .streamsBlocked(let f): return E.streamCountSize(f.limit)
        case .newConnectionID(let f):
            return E.newConnectionIDSize(sequenceNumber: f.sequenceNumber, retirePriorTo: f.retirePriorTo, connectionID: f.connectionID)
        case .retireConnectionID(let s): return E.retireConnectionIDSize(sequenceNumber: s)
        case .pathChallenge, .pathResponse: return E.pathFrameSize
        case .connectionClose(let f):
            return E.connectionCloseSize(errorCode: f.errorCode, frameType: f.isApplicationClose ? nil : f.frameType,
                                         reasonLength: f.reasonPhrase.count)
        case .handshakeDone: return E.handshakeDoneSize
        case .datagram(let f): return E.datagramSize(dataLength: f.data.count, explicitLength: f.hasLength)
        case .ackFrequency(let f): return E.ackFrequencySize(f)
        case .immediateAck: return E.immediateAckSize
        }
    }

    /// Writes the frame (spans read from `source`) and returns its size.
    @discardableResult
    public func encode(source: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        typealias E = FrameEncoder
        switch self {
        case .padding(let n): return E.encodePadding(count: n, into: out)
        case .ping: return E.encodePing(into: out)
        case .ack(let f): return E.encodeAck(ranges: Array(f.ranges(in: source)), ackDelay: f.ackDelay, ecn: f.ecn, into: out)
        case .resetStream(let f): return E.encodeResetStream(streamID: f.streamID, errorCode: f.errorCode, finalSize: f.finalSize, into: out)
        case .resetStreamAt(let f): return E.encodeResetStreamAt(f, into: out)
        case .stopSending(let f): return E.encodeStopSending(streamID: f.streamID, errorCode: f.errorCode, into: out)
        case .crypto(let f): return E.encodeCrypto(offset: f.offset, data: source.slice(f.data), into: out)
        case .newToken(let t): return E.encodeNewToken(source.slice(t), into: out)
        case .stream(let f):
            return E.encodeStream(streamID: f.streamID, offset: f.offset, data: source.slice(f.data), fin: f.fin,
                                  explicitLength: f.hasLength, into: out)
        case .maxData(let x): return E.encodeMaxData(x, into: out)
        case .dataBlocked(let x): return E.encodeDataBlocked(x, into: out)
        case .maxStreamData(let f): return E.encodeMaxStreamData(streamID: f.streamID, maximum: f.maximum, into: out)
        case .streamDataBlocked(let f): return E.encodeStreamDataBlocked(streamID: f.streamID, limit: f.limit, into: out)
        case .maxStreams(let f): return E.encodeMaxStreams(bidirectional: f.bidirectional, limit: f.limit, into: out)
        case .streamsBlocked(let f): return E.encodeStreamsBlocked(bidirectional: f.bidirectional, limit: f.limit, into: out)
        case .newConnectionID(let f):
            return E.encodeNewConnectionID(sequenceNumber: f.sequenceNumber, retirePriorTo: f.retirePriorTo,
                                           connectionID: f.connectionID, statelessResetToken: f.statelessResetToken, into: out)
        case .retireConnectionID(let s): return E.encodeRetireConnectionID(sequenceNumber: s, into: out)
        case .pathChallenge(let d): return E.encodePathChallenge(d, into: out)
        case .pathResponse(let d): return E.encodePathResponse(d, into: out)
        case .connectionClose(let f):
            return E.encodeConnectionClose(errorCode: f.errorCode, frameType: f.isApplicationClose ? nil : f.frameType,
                                           reason: source.slice(f.reasonPhrase), into: out)
        case .handshakeDone: return E.encodeHandshakeDone(into: out)
        case .datagram(let f): return E.encodeDatagram(source.slice(f.data), explicitLength: f.hasLength, into: out)
        case .ackFrequency(let f): return E.encodeAckFrequency(f, into: out)
        case .immediateAck: return E.encodeImmediateAck(into: out)
        }
    }
}
