// The frames of one packet payload, in order (RFC 9000 §12.4).
//
//     var frames = try FrameDecoder(payload, in: packetBytes, kind: .oneRTT, options: options)
//     while let frame = try frames.next() { handle(frame) }   // throws: CONNECTION_CLOSE
//
// A payload must hold at least one frame (§12.4: an empty one is a
// PROTOCOL_VIOLATION), each frame must be permitted in the packet type
// (Table 3) and CONNECTION_CLOSE of type 0x1d may appear only in 0-RTT and
// 1-RTT packets ("ih01"). A frame cannot be split across packets (§12.4),
// so the decoder is not incremental: the payload is whole.

import Core

public struct FrameDecoder {
    public let bytes: UnsafeRawBufferPointer
    public let end: Int
    public let kind: PacketKind
    public let options: FrameDecodingOptions
    public private(set) var position: Int

    /// - Parameters:
    ///   - payload: the decrypted frames' span in `bytes`.
    public init(_ payload: ByteSpan, in bytes: UnsafeRawBufferPointer, kind: PacketKind,
                options: FrameDecodingOptions = FrameDecodingOptions()) throws(QUICError) {
        precondition(payload.start >= 0 && payload.end <= bytes.count)
        guard payload.count > 0 else { throw .packetWithoutFrames }
        self.bytes = bytes
        end = payload.end
        position = payload.start
        self.kind = kind
        self.options = options
    }

    /// The next frame, or nil at the end of the payload.
    public mutating func next() throws(QUICError) -> Frame? {
        guard position < end else { return nil }
        // Check the packet type before decoding the frame: a frame type that
        // may not be here is a PROTOCOL_VIOLATION even when it is malformed.
        if let (type, _) = VarInt.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<end]), at: position) {
            // Unknown types fall through to FRAME_ENCODING_ERROR in decode.
            let known = type <= FrameType.handshakeDone || type == FrameType.datagram || type == FrameType.datagramWithLength
                || type == FrameType.resetStreamAt
            if known && !FrameType.isPermitted(type, in: kind) { throw QUICError.frameNotPermitted.inFrame(type) }
        }
        let (frame, next) = try Frame.decode(bytes, at: position, end: end, options: options)
        position = next
        return frame
    }
}
