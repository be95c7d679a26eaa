// Frame decoders (RFC 9000 §19; RFC 9221 §4).
//
// `Frame.decode` reads one frame starting at `at` inside a decrypted packet
// payload that ends at `end`, and returns it with the offset after it. It
// checks what the frame alone can tell: field truncation, the frame type's
// minimal encoding (§12.4), ACK range arithmetic (§19.3.1), offsets past
// 2^62-1 (§19.6, §19.8), stream counts past 2^60 (§19.11, §19.14),
// NEW_CONNECTION_ID's length and Retire Prior To (§19.15), an empty
// NEW_TOKEN (§19.7), frames only a server may send (§19.7, §19.20) and
// DATAGRAM against our max_datagram_frame_size (RFC 9221 §3). Every error is
// a connection error reported with the frame's type.

import Core

/// What the receiver negotiated that frame decoding depends on.
public struct FrameDecodingOptions: Sendable, Equatable {
    /// Our max_datagram_frame_size transport parameter (RFC 9221 §3); nil:
    /// not advertised, so any DATAGRAM frame is a PROTOCOL_VIOLATION.
    public var maxDatagramFrameSize: UInt64?
    /// Whether the peer is a client (we are the server): a client never
    /// sends NEW_TOKEN or HANDSHAKE_DONE.
    public var peerIsClient: Bool
    /// Our min_ack_delay transport parameter in microseconds
    /// (draft-ietf-quic-ack-frequency §3); nil: not advertised, so
    /// ACK_FREQUENCY and IMMEDIATE_ACK are a PROTOCOL_VIOLATION.
    public var minAckDelay: UInt64?
    /// Whether we sent the reset_stream_at transport parameter
    /// (draft-ietf-quic-reliable-stream-reset §3); false: RESET_STREAM_AT is
    /// a PROTOCOL_VIOLATION.
    public var resetStreamAt: Bool

    public init(maxDatagramFrameSize: UInt64? = nil, peerIsClient: Bool = true, minAckDelay: UInt64? = nil,
                resetStreamAt: Bool = false) {
        self.maxDatagramFrameSize = maxDatagramFrameSize
        self.peerIsClient = peerIsClient
        self.minAckDelay = minAckDelay
        self.resetStreamAt = resetStreamAt
    }
}

extension Frame {
    /// 2^60: the largest stream count (§19.11).
    public static let maxStreamCount: UInt64 = 1 << 60

    /// Decodes the frame at `bytes[at...]` within a payload ending at `end`.
    /// - Returns: the frame and the offset just after it.
    public static func decode(_ bytes: UnsafeRawBufferPointer, at: Int, end: Int,
                              options: FrameDecodingOptions = FrameDecodingOptions()) throws(QUICError) -> (Frame, Int) {
        var r = WireReader(bytes, from: at, to: end, truncated: .frameTruncated)
        let (type, typeLength) = try r.varintWithLength()
        guard VarInt.isMinimal(type, length: typeLength) else { throw QUICError.frameTypeNotMinimal.inFrame(type) }
        do {
            let frame = try decodeBody(type, &r, options)
            return (frame, r.position)
        } catch {
            throw error.inFrame(type)
        }
    }

    private static func decodeBody(_ type: UInt64, _ r: inout WireReader,
                                   _ options: FrameDecodingOptions) throws(QUICError) -> Frame {
        switch type {
        case FrameType.padding:
            // Collapse the run (§19.1: each PADDING is one 0x00 byte).
            var n = 1
            while !r.isAtEnd && r.bytes[r.position] == 0 {
                _ = try r.uint8()
                n += 1
            }
            return .padding(count: n)
        case FrameType.ping:
            return .ping
        case FrameType.ack, FrameType.ackECN:
            return .ack(try decodeAck(&r, ecn: type == FrameType.ackECN))
        case FrameType.resetStream:
            return .resetStream(ResetStreamFrame(streamID: try r.varint(), errorCode: try r.varint(), finalSize: try r.varint()))
        case FrameType.stopSending:
            return .stopSending(StopSendingFrame(streamID: try r.varint(), errorCode: try r.varint()))
        case FrameType.crypto:
            let offset = try r.varint()
            let data = try r.span(try r.varint())
            guard offset + UInt64(data.count) <= VarInt.max else { throw .offsetTooLarge }
            return .crypto(CryptoFrame(offset: offset, data: data))
        case FrameType.newToken:
            if options.peerIsClient { throw .serverOnlyFrame }
            let token = try r.span(try r.varint())
            guard token.count > 0 else { throw .emptyToken }
            return .newToken(token: token)
        case FrameType.stream...(FrameType.stream | 0x07):
            let streamID = try r.varint()
            let offset = type & 0x04 != 0 ? try r.varint() : 0
            let hasLength = type & 0x02 != 0
            let data = hasLength ? try r.span(try r.varint()) : r.rest()
            guard offset + UInt64(data.count) <= VarInt.max else { throw .offsetTooLarge }
            return .stream(StreamFrame(streamID: streamID, offset: offset, data: data, fin: type & 0x01 != 0, hasLength: hasLength))
        case FrameType.maxData:
            return .maxData(try r.varint())
        case FrameType.maxStreamData:
            return .maxStreamData(MaxStreamDataFrame(streamID: try r.varint(), maximum: try r.varint()))
        case FrameType.maxStreamsBidi, FrameType.maxStreamsUni:
            let limit = try r.varint()
            guard limit <= maxStreamCount else { throw .streamLimitTooLarge }
            return .maxStreams(StreamLimitFrame(bidirectional: type == FrameType.maxStreamsBidi, limit: limit))
        case FrameType.dataBlocked:
            return .dataBlocked(try r.varint())
        case FrameType.streamDataBlocked:
            return .streamDataBlocked(StreamDataBlockedFrame(streamID: try r.varint(), limit: try r.varint()))
        case FrameType.streamsBlockedBidi, FrameType.streamsBlockedUni:
            let limit = try r.varint()
            guard limit <= maxStreamCount else { throw .streamLimitTooLarge }
            return .streamsBlocked(StreamLimitFrame(bidirectional: type == FrameType.streamsBlockedBidi, limit: limit))
        case FrameType.newConnectionID:
            let sequence = try r.varint()
            let retirePriorTo = try r.varint()
            let length = try r.uint8()
            guard length >= 1 && Int(length) <= ConnectionID.maxLength else { throw .connectionIDLength }
            let id = ConnectionID(r.bytes.slice(try r.span(Int(length))))!
            let token = StatelessResetToken(r.bytes.slice(try r.span(16)))
            guard retirePriorTo <= sequence else { throw .retirePriorToAboveSequence }
            return .newConnectionID(NewConnectionIDFrame(sequenceNumber: sequence, retirePriorTo: retirePriorTo,
                                                         connectionID: id, statelessResetToken: token))
        case FrameType.retireConnectionID:
            return .retireConnectionID(sequenceNumber: try r.varint())
        case FrameType.pathChallenge:
            return .pathChallenge(try r.uint64())
        case FrameType.pathResponse:
            return .pathResponse(try r.uint64())
        case FrameType.connectionClose, FrameType.applicationClose:
            let application = type == FrameType.applicationClose
            let code = try r.varint()
            let frameType = application ? 0 : try r.varint()
            let reason = try r.span(try r.varint())
            return .connectionClose(ConnectionCloseFrame(isApplicationClose: application, errorCode: code,
                                                         frameType: frameType, reasonPhrase: reason))
        case FrameType.handshakeDone:
            // §19.20: "A server MUST treat receipt of a HANDSHAKE_DONE frame
            // as a connection error of type PROTOCOL_VIOLATION."
            if options.peerIsClient { throw .serverOnlyFrame }
            return .handshakeDone
        case FrameType.datagram, FrameType.datagramWithLength:
            guard let limit = options.maxDatagramFrameSize else { throw .datagramNotNegotiated }
            let start = r.position - 1
            let hasLength = type == FrameType.datagramWithLength
            let data = hasLength ? try r.span(try r.varint()) : r.rest()
            // RFC 9221 §3: the limit is on the whole frame (type, length, data).
            guard UInt64(r.position - start) <= limit else { throw .datagramTooLarge }
            return .datagram(DatagramFrame(data: data, hasLength: hasLength))
        case FrameType.ackFrequency:
            return try decodeAckFrequency(&r, options)
        case FrameType.immediateAck:
            return try decodeImmediateAck(options)
        case FrameType.resetStreamAt:
            return try decodeResetStreamAt(&r, options)
        default:
            throw .unknownFrameType
        }
    }

    /// §19.3: the fields, then the range arithmetic of §19.3.1 checked in
    /// full so `AckRanges` can trust it.
    private static func decodeAck(_ r: inout WireReader, ecn: Bool) throws(QUICError) -> AckFrame {
        let largest = try r.varint()
        let delay = try r.varint()
        let count = try r.varint()
        let first = try r.varint()
        // "Largest Acknowledged - ACK Range" is the smallest of the first range.
        guard first <= largest else { throw .ackRangeNegative }
        var smallest = largest - first
        let rangesStart = r.position
        var i: UInt64 = 0
        while i < count {
            // Each range is at least two bytes: a huge count runs out of
            // input (FRAME_ENCODING_ERROR) long before it takes time.
            let gap = try r.varint()
            let length = try r.varint()
            // "largest = previous_smallest - gap - 2"; "smallest = largest - ack_range_length".
            guard smallest >= 2, gap <= smallest - 2 else { throw .ackRangeNegative }
            let rangeLargest = smallest - gap - 2
            guard length <= rangeLargest else { throw .ackRangeNegative }
            smallest = rangeLargest - length
            i += 1
        }
        let ranges = ByteSpan(offset: rangesStart, length: r.position - rangesStart)
        var counts: ECNCounts?
        if ecn { counts = ECNCounts(ect0: try r.varint(), ect1: try r.varint(), ce: try r.varint()) }
        return AckFrame(largestAcknowledged: largest, ackDelay: delay, firstRange: first, rangeCount: count,
                        additionalRanges: ranges, ecn: counts)
    }
}
