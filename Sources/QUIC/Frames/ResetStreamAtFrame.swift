// The reliable stream reset extension's frame (draft-ietf-quic-reliable-
// stream-reset, §4 "RESET_STREAM_AT Frame"; the draft is not in
// shared/reference — what we rely on is from drafts -06/-07).
//
//   RESET_STREAM_AT Frame {
//     Type (i) = 0x24,
//     Stream ID (i),
//     Application Protocol Error Code (i),
//     Final Size (i),
//     Reliable Size (i),
//   }
//
// RESET_STREAM (RFC 9000 §19.4) with one more field: the bytes below the
// Reliable Size are still delivered, reliably, before the reset takes
// effect; RESET_STREAM is RESET_STREAM_AT with a Reliable Size of 0.
// WebTransport (draft-ietf-webtrans-http3 §4.4 "Resetting Data Streams")
// uses it so that a reset stream's header — which names its session —
// always arrives.
//
// What the decoder judges: a peer may send the frame only if we sent the
// empty reset_stream_at transport parameter (§3). The draft text we
// could consult does not name the error for a frame that was not
// negotiated; we answer PROTOCOL_VIOLATION, as RFC 9221 §3 does for an
// unnegotiated DATAGRAM and draft-ietf-quic-ack-frequency §3 for
// ACK_FREQUENCY (a peer that never implemented the extension would say
// FRAME_ENCODING_ERROR, RFC 9000 §12.4 — either closes the connection).
// §4: "If the Reliable Size is larger than the Final Size, the receiver
// MUST close the connection with a connection error of type
// FRAME_ENCODING_ERROR." Stream state and final-size rules are RESET_
// STREAM's (RFC 9000 §19.4, §4.5) and belong to the connection. Like
// RESET_STREAM it travels in 0-RTT and 1-RTT packets only (Table 3 "__01").

import Core

extension FrameType {
    public static let resetStreamAt: UInt64 = 0x24
}

public struct ResetStreamAtFrame: Equatable, Sendable {
    public var streamID: UInt64
    /// An application protocol error code.
    public var errorCode: UInt64
    public var finalSize: UInt64
    /// Bytes below this offset are delivered before the reset (≤ finalSize).
    public var reliableSize: UInt64

    public init(streamID: UInt64, errorCode: UInt64, finalSize: UInt64, reliableSize: UInt64) {
        self.streamID = streamID
        self.errorCode = errorCode
        self.finalSize = finalSize
        self.reliableSize = reliableSize
    }
}

extension QUICError {
    // Not negotiated: see the file header for why PROTOCOL_VIOLATION.
    public static let resetStreamAtNotNegotiated = QUICError(code: .protocolViolation,
                                                             reason: "RESET_STREAM_AT without reset_stream_at")
    // §4: "If the Reliable Size is larger than the Final Size, the receiver
    // MUST close the connection with a connection error of type
    // FRAME_ENCODING_ERROR."
    public static let reliableSizeAboveFinalSize = QUICError(code: .frameEncodingError,
                                                             reason: "RESET_STREAM_AT Reliable Size above Final Size")
}

extension Frame {
    static func decodeResetStreamAt(_ r: inout WireReader, _ options: FrameDecodingOptions) throws(QUICError) -> Frame {
        guard options.resetStreamAt else { throw .resetStreamAtNotNegotiated }
        let f = ResetStreamAtFrame(streamID: try r.varint(), errorCode: try r.varint(), finalSize: try r.varint(),
                                   reliableSize: try r.varint())
        guard f.reliableSize <= f.finalSize else { throw .reliableSizeAboveFinalSize }
        return .resetStreamAt(f)
    }
}

extension FrameEncoder {
    public static func resetStreamAtSize(_ f: ResetStreamAtFrame) -> Int {
        1 + v(f.streamID) + v(f.errorCode) + v(f.finalSize) + v(f.reliableSize)
    }

    @discardableResult
    public static func encodeResetStreamAt(_ f: ResetStreamAtFrame, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(f.reliableSize <= f.finalSize, "§4: Reliable Size ≤ Final Size")
        var w = WireWriter(out, size: resetStreamAtSize(f))
        w.uint8(UInt8(FrameType.resetStreamAt))
        w.varint(f.streamID)
        w.varint(f.errorCode)
        w.varint(f.finalSize)
        w.varint(f.reliableSize)
        return w.finish()
    }
}
