// A minimal QUIC client built from the wire layer, for driving the server
// endpoint in tests: it writes Initial, Handshake and 1-RTT packets with
// the known keys (RFC 9001 §5.2 Initial keys; FakeTLS secrets for the
// rest) and reads the server's datagrams back into frames.

import XCTest
import Core
@testable import QUIC

/// One packet the client received, decrypted; `frames` hold spans into `bytes`.
struct ReceivedPacket {
    var space: PacketNumberSpace
    var packetNumber: UInt64
    var keyPhase: Bool
    var bytes: [UInt8]
    var frames: [Frame]
    var size: Int

    func slice(_ span: ByteSpan) -> [UInt8] { Array(bytes[span.start..<span.end]) }

    var ackEliciting: Bool { frames.contains { $0.isAckEliciting } }
}

final class TestClient {
    var version: QUICVersion
    let originalDestinationID: ConnectionID
    let sourceID: ConnectionID
    /// Where the client sends: the original DCID, then the server's SCID.
    var destinationID: ConnectionID
    var serverSourceID: ConnectionID?
    var readKeys: [PacketKeys?] = [nil, nil, nil]
    var writeKeys: [PacketKeys?] = [nil, nil, nil]
    var nextPacketNumber: [UInt64] = [0, 0, 0]
    var largestReceived: [UInt64?] = [nil, nil, nil]
    var keyPhase = false
    var suite = CipherSuite.aes128GCM
    var parameters = TransportParameters()
    /// The Token field of the Initials it sends (§17.2.2).
    var token: [UInt8] = []

    init(version: QUICVersion = .v1, destinationID: ConnectionID = cid("8394c8f03e515708"),
         sourceID: ConnectionID = cid("c1c2c3c4")) {
        self.version = version
        originalDestinationID = destinationID
        self.sourceID = sourceID
        self.destinationID = destinationID
        let k = InitialKeys.derive(destinationID: destinationID, version: version)
        writeKeys[0] = k.client
        readKeys[0] = k.server
        parameters.initialSourceConnectionID = sourceID
        parameters.initialMaxData = 1 << 20
        parameters.initialMaxStreamDataBidiLocal = 256 << 10
        parameters.initialMaxStreamDataBidiRemote = 256 << 10
        parameters.initialMaxStreamDataUni = 256 << 10
        parameters.initialMaxStreamsBidi = 10
        parameters.initialMaxStreamsUni = 3
        parameters.maxIdleTimeout = 60_000
        parameters.activeConnectionIDLimit = 4
    }

    /// §17.2.5.2: after a Retry, Initials go to its Source Connection ID,
    /// with its token, under keys from that ID (RFC 9001 §5.2); packet
    /// numbers continue (§17.2.5.3).
    func followRetry(sourceID: ConnectionID, token: [UInt8]) {
        destinationID = sourceID
        self.token = token
        let k = InitialKeys.derive(destinationID: sourceID, version: version)
        writeKeys[0] = k.client
        readKeys[0] = k.server
    }

    /// RFC 9368 §2.2: the server's packets came in `negotiated`: Initial
    /// keys of that version from the same Destination Connection ID, and
    /// every later key with its labels.
    func adoptVersion(_ negotiated: QUICVersion) {
        version = negotiated
        let k = InitialKeys.derive(destinationID: originalDestinationID, version: negotiated)
        writeKeys[0] = k.client
        readKeys[0] = k.server
    }

    func installHandshakeKeys() {
        writeKeys[1] = PacketKeys(suite: suite, secret: FakeTLS.handshakeClientSecret, version: version)
        readKeys[1] = PacketKeys(suite: suite, secret: FakeTLS.handshakeServerSecret, version: version)
    }

    func installApplicationKeys() {
        writeKeys[2] = PacketKeys(suite: suite, secret: FakeTLS.applicationClientSecret, version: version)
        readKeys[2] = PacketKeys(suite: suite, secret: FakeTLS.applicationServerSecret, version: version)
    }

    /// Starts a key update (RFC 9001 §6.1): next write keys, flipped phase.
    /// The read keys move when the server's packets show the new phase.
    func initiateKeyUpdate() {
        writeKeys[2] = writeKeys[2]!.nextGeneration()
        keyPhase.toggle()
    }

    var encodedParameters: [UInt8] {
        var out = [UInt8](repeating: 0, count: parameters.encodedSize())
        out.withUnsafeMutableBytes { _ = parameters.encode(into: $0) }
        return out
    }

    var clientHello: [UInt8] { FakeTLS.message(FakeTLS.clientHello, encodedParameters) }

    // MARK: writing

    /// One protected packet in `space` carrying `frames`.
    func packet(_ space: PacketNumberSpace, _ frames: [UInt8], packetNumber: UInt64? = nil,
                destination: ConnectionID? = nil) -> [UInt8] {
        let s = space.rawValue
        let pn = packetNumber ?? nextPacketNumber[s]
        nextPacketNumber[s] = max(nextPacketNumber[s], pn + 1)
        let pnLength = 2
        var payload = frames
        let minimum = PacketProtection.minimumPayloadLength(packetNumberLength: pnLength)
        if payload.count < minimum { payload += [UInt8](repeating: 0, count: minimum - payload.count) }
        let dcid = destination ?? destinationID
        let headerLength: Int
        if space == .application {
            headerLength = PacketHeaderEncoder.shortHeaderSize(destinationID: dcid, packetNumberLength: pnLength)
        } else {
            headerLength = PacketHeaderEncoder.longHeaderSize(destinationID: dcid, sourceID: sourceID,
                                                              tokenLength: space == .initial ? token.count : nil,
                                                              packetNumberLength: pnLength, payloadLength: payload.count)
        }
        var out = [UInt8](repeating: 0, count: headerLength + payload.count + 16)
        out.withUnsafeMutableBytes { o in
            self.token.withUnsafeBytes { token in
                if space == .application {
                    PacketHeaderEncoder.encodeShort(destinationID: dcid, keyPhase: keyPhase, packetNumber: pn,
                                                    packetNumberLength: pnLength, into: o)
                } else {
                    PacketHeaderEncoder.encodeLong(type: space == .initial ? .initial : .handshake, version: version,
                                                   destinationID: dcid, sourceID: sourceID,
                                                   token: space == .initial ? token : nil, packetNumber: pn,
                                                   packetNumberLength: pnLength, payloadLength: payload.count, into: o)
                }
            }
            (o.baseAddress! + headerLength).copyMemory(from: payload, byteCount: payload.count)
            PacketProtection.seal(o, headerLength: headerLength, payloadLength: payload.count, packetNumber: pn,
                                  keys: writeKeys[s]!)
        }
        return out
    }

    /// A datagram of the given packets, padded to `padTo` bytes by
    /// enlarging the first Initial with PADDING (a client pads its Initials,
    /// §14.1).
    func initialDatagram(_ frames: [UInt8], padTo: Int = 1200, then more: [[UInt8]] = []) -> [UInt8] {
        let rest = more.reduce(0) { $0 + $1.count }
        var first = packet(.initial, frames)
        if first.count + rest < padTo {
            nextPacketNumber[0] -= 1
            first = packet(.initial, frames + [UInt8](repeating: 0, count: padTo - rest - first.count))
        }
        return more.reduce(first, +)
    }

    // MARK: reading

    /// Decrypts the packets of a server datagram the client has keys for.
    func read(_ datagram: [UInt8]) -> [ReceivedPacket] {
        var out: [ReceivedPacket] = []
        var d = datagram
        d.withUnsafeMutableBytes { buffer in
            var packets = CoalescedPackets(UnsafeRawBufferPointer(buffer), shortHeaderIDLength: sourceID.count)
            while let item = packets.next() {
                guard case .packet(let header) = item else { continue }
                let space: PacketNumberSpace
                let span: ByteSpan
                let pnOffset: Int
                switch header {
                case .long(let h):
                    space = h.type == .initial ? .initial : .handshake
                    span = h.packet
                    pnOffset = h.packetNumberOffsetInPacket
                    if serverSourceID == nil {
                        serverSourceID = h.sourceID
                        destinationID = h.sourceID
                    }
                case .short(let h):
                    space = .application
                    span = h.packet
                    pnOffset = h.packetNumberOffsetInPacket
                default:
                    continue
                }
                guard var keys = readKeys[space.rawValue] else { continue }
                let packet = UnsafeMutableRawBufferPointer(rebasing: buffer[span.start..<span.end])
                var copy = Array(packet)
                // 1-RTT: follow the server's key phase (it answers our update).
                if space == .application {
                    let header = copy.withUnsafeMutableBytes {
                        try? PacketProtection.removeHeaderProtection($0, packetNumberOffset: pnOffset,
                                                                     largestReceived: largestReceived[2], key: keys.headerProtection)
                    }
                    if let header, header.keyPhase != keyPhaseOfReadKeys { keys = keys.nextGeneration() }
                    copy = Array(packet)
                }
                let opened = copy.withUnsafeMutableBytes {
                    try? PacketProtection.open($0, packetNumberOffset: pnOffset, largestReceived: largestReceived[space.rawValue], keys: keys)
                }
                guard let opened else { continue }
                if space == .application && opened.header.keyPhase != keyPhaseOfReadKeys {
                    readKeys[2] = keys
                    keyPhaseOfReadKeys = opened.header.keyPhase
                }
                largestReceived[space.rawValue] = max(largestReceived[space.rawValue] ?? 0, opened.header.packetNumber)
                var frames: [Frame] = []
                copy.withUnsafeBytes { b in
                    var decoder = try! FrameDecoder(opened.payload, in: b, kind: space.packetKind, options: FrameDecodingOptions(maxDatagramFrameSize: parameters.maxDatagramFrameSize, peerIsClient: false,
                                                                                                                                  resetStreamAt: parameters.resetStreamAt))
                    while let f = try! decoder.next() { frames.append(f) }
                }
                out.append(ReceivedPacket(space: space, packetNumber: opened.header.packetNumber, keyPhase: opened.header.keyPhase,
                                          bytes: copy, frames: frames, size: span.count))
            }
        }
        return out
    }

    var keyPhaseOfReadKeys = false
}

// MARK: - frame builders

enum Frames {
    static func build(_ size: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        let n = out.withUnsafeMutableBytes { body($0) }
        precondition(n == size)
        return out
    }

    static func crypto(offset: UInt64 = 0, _ data: [UInt8]) -> [UInt8] {
        build(FrameEncoder.cryptoSize(offset: offset, dataLength: data.count)) { o in
            data.withUnsafeBytes { FrameEncoder.encodeCrypto(offset: offset, data: $0, into: o) }
        }
    }

    static func stream(_ id: UInt64, offset: UInt64 = 0, _ data: [UInt8], fin: Bool = false) -> [UInt8] {
        build(FrameEncoder.streamSize(streamID: id, offset: offset, dataLength: data.count)) { o in
            data.withUnsafeBytes { FrameEncoder.encodeStream(streamID: id, offset: offset, data: $0, fin: fin, into: o) }
        }
    }

    /// `ranges` largest first.
    static func ack(_ ranges: [ClosedRange<UInt64>], delay: UInt64 = 0) -> [UInt8] {
        build(FrameEncoder.ackSize(ranges: ranges, ackDelay: delay)) { FrameEncoder.encodeAck(ranges: ranges, ackDelay: delay, into: $0) }
    }

    static let ping: [UInt8] = [0x01]

    static func maxData(_ v: UInt64) -> [UInt8] { build(FrameEncoder.connectionLimitSize(v)) { FrameEncoder.encodeMaxData(v, into: $0) } }

    static func maxStreamData(_ id: UInt64, _ v: UInt64) -> [UInt8] {
        build(FrameEncoder.streamLimitSize(streamID: id, v)) { FrameEncoder.encodeMaxStreamData(streamID: id, maximum: v, into: $0) }
    }

    static func maxStreams(bidirectional: Bool, _ v: UInt64) -> [UInt8] {
        build(FrameEncoder.streamCountSize(v)) { FrameEncoder.encodeMaxStreams(bidirectional: bidirectional, limit: v, into: $0) }
    }

    static func resetStream(_ id: UInt64, code: UInt64, finalSize: UInt64) -> [UInt8] {
        build(FrameEncoder.resetStreamSize(streamID: id, errorCode: code, finalSize: finalSize)) {
            FrameEncoder.encodeResetStream(streamID: id, errorCode: code, finalSize: finalSize, into: $0)
        }
    }

    static func stopSending(_ id: UInt64, code: UInt64) -> [UInt8] {
        build(FrameEncoder.stopSendingSize(streamID: id, errorCode: code)) { FrameEncoder.encodeStopSending(streamID: id, errorCode: code, into: $0) }
    }

    static func streamDataBlocked(_ id: UInt64, _ v: UInt64) -> [UInt8] {
        build(FrameEncoder.streamLimitSize(streamID: id, v)) { FrameEncoder.encodeStreamDataBlocked(streamID: id, limit: v, into: $0) }
    }

    static func connectionClose(code: UInt64, application: Bool, reason: [UInt8] = []) -> [UInt8] {
        build(FrameEncoder.connectionCloseSize(errorCode: code, frameType: application ? nil : 0, reasonLength: reason.count)) { o in
            reason.withUnsafeBytes { FrameEncoder.encodeConnectionClose(errorCode: code, frameType: application ? nil : 0, reason: $0, into: o) }
        }
    }

    static func newConnectionID(sequence: UInt64, retirePriorTo: UInt64 = 0, id: ConnectionID, token: StatelessResetToken) -> [UInt8] {
        build(FrameEncoder.newConnectionIDSize(sequenceNumber: sequence, retirePriorTo: retirePriorTo, connectionID: id)) {
            FrameEncoder.encodeNewConnectionID(sequenceNumber: sequence, retirePriorTo: retirePriorTo, connectionID: id,
                                               statelessResetToken: token, into: $0)
        }
    }

    static func retireConnectionID(_ sequence: UInt64) -> [UInt8] {
        build(FrameEncoder.retireConnectionIDSize(sequenceNumber: sequence)) { FrameEncoder.encodeRetireConnectionID(sequenceNumber: sequence, into: $0) }
    }

    static func pathChallenge(_ data: UInt64) -> [UInt8] { build(FrameEncoder.pathFrameSize) { FrameEncoder.encodePathChallenge(data, into: $0) } }
    static func pathResponse(_ data: UInt64) -> [UInt8] { build(FrameEncoder.pathFrameSize) { FrameEncoder.encodePathResponse(data, into: $0) } }
    static func padding(_ n: Int) -> [UInt8] { [UInt8](repeating: 0, count: n) }
}

extension Frames {
    /// draft-ietf-quic-reliable-stream-reset §4.
    static func resetStreamAt(_ id: UInt64, code: UInt64, finalSize: UInt64, reliableSize: UInt64) -> [UInt8] {
        let f = ResetStreamAtFrame(streamID: id, errorCode: code, finalSize: finalSize, reliableSize: reliableSize)
        return build(FrameEncoder.resetStreamAtSize(f)) { FrameEncoder.encodeResetStreamAt(f, into: $0) }
    }
}
