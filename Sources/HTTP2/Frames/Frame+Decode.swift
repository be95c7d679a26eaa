// Payload decoders for each frame type (RFC 9113 §6.1–§6.10).
//
// `Frame.decode` gets a header and the complete payload in place and returns
// a frame of views into it. It checks everything that can be judged from the
// frame alone — size per type (§4.2), padding (§6.1, §6.2, §6.6), the stream
// identifier being zero or not, setting values (§6.5.2), a zero window
// increment (§6.9), self-dependency of PRIORITY (§5.3.1) — and nothing that needs
// connection state (stream states, CONTINUATION sequencing, PUSH_PROMISE sent
// to a server, SETTINGS ordering), which is the connection's job.
// Stream-scoped errors come out with `scope == .stream(id)`; the frame is
// then fully read and the caller may carry on.

import Core

extension Frame {
    /// Decodes the payload of `header` found at `bytes[payloadAt...]`.
    public static func decode(header h: FrameHeader, in bytes: UnsafeRawBufferPointer, payloadAt p: Int) throws(FrameError) -> Frame {
        precondition(bytes.count - p >= h.length)
        switch h.type {
        case .data:
            guard h.streamID != 0 else { throw .streamIDZero }
            let (data, pad) = try unpad(h, bytes, p, fixed: 0)
            return .data(DataFrame(streamID: h.streamID, endStream: h.flags.contains(.endStream), data: data,
                                   padLength: pad, flowControlledLength: h.length))
        case .headers:
            guard h.streamID != 0 else { throw .streamIDZero }
            let hasPriority = h.flags.contains(.priority)
            let (block, pad) = try unpad(h, bytes, p, fixed: hasPriority ? PrioritySpec.size : 0)
            var priority: PrioritySpec?
            if hasPriority {
                // A self-dependency (§5.3.1) is not thrown here: the field
                // block must still be decoded to keep HPACK in step, so the
                // connection checks `priority.dependency` itself once the
                // block is complete.
                priority = decodePriority(bytes, at: block.start - PrioritySpec.size)
            }
            return .headers(HeadersFrame(streamID: h.streamID, endStream: h.flags.contains(.endStream),
                                         endHeaders: h.flags.contains(.endHeaders), priority: priority,
                                         fieldBlockFragment: block, padLength: pad))
        case .priority:
            guard h.streamID != 0 else { throw .streamIDZero }
            guard h.length == PrioritySpec.size else { throw FrameError.prioritySize.onStream(h.streamID) }
            let spec = decodePriority(bytes, at: p)
            guard spec.dependency != h.streamID else { throw FrameError.selfDependency.onStream(h.streamID) }
            return .priority(PriorityFrame(streamID: h.streamID, priority: spec))
        case .rstStream:
            guard h.streamID != 0 else { throw .streamIDZero }
            guard h.length == 4 else { throw .rstStreamSize }
            return .rstStream(RstStreamFrame(streamID: h.streamID, errorCode: HTTP2ErrorCode(rawValue: readUInt32(bytes, at: p))))
        case .settings:
            return .settings(try decodeSettings(h, bytes, p))
        case .pushPromise:
            guard h.streamID != 0 else { throw .streamIDZero }
            let (block, pad) = try unpad(h, bytes, p, fixed: 4)
            let promised = readUInt32(bytes, at: block.start - 4) & 0x7fff_ffff
            return .pushPromise(PushPromiseFrame(streamID: h.streamID, endHeaders: h.flags.contains(.endHeaders),
                                                 promisedStreamID: promised, fieldBlockFragment: block, padLength: pad))
        case .ping:
            guard h.streamID == 0 else { throw .streamIDNonZero }
            guard h.length == 8 else { throw .pingSize }
            let opaque = UInt64(readUInt32(bytes, at: p)) << 32 | UInt64(readUInt32(bytes, at: p + 4))
            return .ping(PingFrame(ack: h.flags.contains(.ack), opaqueData: opaque))
        case .goAway:
            guard h.streamID == 0 else { throw .streamIDNonZero }
            guard h.length >= 8 else { throw .payloadTooShort }
            return .goAway(GoAwayFrame(lastStreamID: readUInt32(bytes, at: p) & 0x7fff_ffff,
                                       errorCode: HTTP2ErrorCode(rawValue: readUInt32(bytes, at: p + 4)),
                                       debugData: ByteSpan(offset: p + 8, length: h.length - 8)))
        case .windowUpdate:
            guard h.length == 4 else { throw .windowUpdateSize }
            let increment = readUInt32(bytes, at: p) & 0x7fff_ffff
            guard increment != 0 else {
                throw h.streamID == 0 ? .windowUpdateZero : FrameError.windowUpdateZero.onStream(h.streamID)
            }
            return .windowUpdate(WindowUpdateFrame(streamID: h.streamID, increment: increment))
        case .continuation:
            guard h.streamID != 0 else { throw .streamIDZero }
            return .continuation(ContinuationFrame(streamID: h.streamID, endHeaders: h.flags.contains(.endHeaders),
                                                   fieldBlockFragment: ByteSpan(offset: p, length: h.length)))
        default:
            return .unknown(UnknownFrame(header: h, payload: ByteSpan(offset: p, length: h.length)))
        }
    }

    /// Strips the padding of a PADDED-capable frame with `fixed` octets of
    /// mandatory fields after the Pad Length octet.
    /// - Returns: the rest of the payload, and the padding length if padded.
    private static func unpad(_ h: FrameHeader, _ bytes: UnsafeRawBufferPointer, _ p: Int,
                              fixed: Int) throws(FrameError) -> (ByteSpan, Int?) {
        guard h.flags.contains(.padded) else {
            guard h.length >= fixed else { throw .payloadTooShort }
            return (ByteSpan(offset: p + fixed, length: h.length - fixed), nil)
        }
        guard h.length >= 1 + fixed else { throw .payloadTooShort }
        let pad = Int(bytes[p])
        guard pad <= h.length - 1 - fixed else { throw .paddingTooLong }
        return (ByteSpan(offset: p + 1 + fixed, length: h.length - 1 - fixed - pad), pad)
    }

    private static func decodePriority(_ bytes: UnsafeRawBufferPointer, at i: Int) -> PrioritySpec {
        let word = readUInt32(bytes, at: i)
        return PrioritySpec(exclusive: word & 0x8000_0000 != 0, dependency: word & 0x7fff_ffff, weight: bytes[i + 4])
    }

    private static func decodeSettings(_ h: FrameHeader, _ bytes: UnsafeRawBufferPointer, _ p: Int) throws(FrameError) -> SettingsFrame {
        guard h.streamID == 0 else { throw .streamIDNonZero }
        let span = ByteSpan(offset: p, length: h.length)
        if h.flags.contains(.ack) {
            // §6.5: "Receipt of a SETTINGS frame with the ACK flag set and a
            // length field value other than 0 MUST be treated as a connection
            // error of type FRAME_SIZE_ERROR."
            guard h.length == 0 else { throw .settingsAckWithPayload }
            return SettingsFrame(ack: true, parameters: span)
        }
        guard h.length % 6 == 0 else { throw .settingsSize }
        let frame = SettingsFrame(ack: false, parameters: span)
        for i in 0..<frame.count { try frame.parameter(i, in: bytes).validate() }
        return frame
    }
}
