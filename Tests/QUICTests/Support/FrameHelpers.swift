// Frame test helpers: decode one frame, decode a payload.

import XCTest
import Core
@testable import QUIC

let serverSide = FrameDecodingOptions(maxDatagramFrameSize: 1200, peerIsClient: true)
let clientSide = FrameDecodingOptions(maxDatagramFrameSize: 1200, peerIsClient: false)

/// Decodes `wire` as exactly one frame (it must consume everything).
func decodeOne(_ wire: [UInt8], options: FrameDecodingOptions = clientSide,
               file: StaticString = #filePath, line: UInt = #line) throws -> Frame {
    let result: Result<(Frame, Int), QUICError> = wire.withUnsafeBytes { b in
        do {
            return .success(try Frame.decode(b, at: 0, end: b.count, options: options))
        } catch {
            return .failure(error as! QUICError)
        }
    }
    let (frame, next) = try result.get()
    XCTAssertEqual(next, wire.count, "frame did not consume its bytes", file: file, line: line)
    return frame
}

/// Every frame of a payload in a packet of `kind`.
func decodeAll(_ wire: [UInt8], kind: PacketKind = .oneRTT, options: FrameDecodingOptions = clientSide) throws -> [Frame] {
    let result: Result<[Frame], QUICError> = wire.withUnsafeBytes { b in
        do {
            var d = try FrameDecoder(ByteSpan(offset: 0, length: b.count), in: b, kind: kind, options: options)
            var out: [Frame] = []
            while let f = try d.next() { out.append(f) }
            return .success(out)
        } catch {
            return .failure(error as! QUICError)
        }
    }
    return try result.get()
}
