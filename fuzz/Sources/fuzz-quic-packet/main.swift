// libFuzzer target for the QUIC receive path up to frames (see
// fuzz/README.md): datagram → coalesced packets → header → Initial-key
// unprotection → frame decoding.
//
// Input layout: byte 0 = flags, byte 1 = DCID length (mod 21), then that
// many bytes of DCID (the Initial keys derive from it, as a server's do from
// the client's first DCID), then the body.
//  * flags bit 7 clear: the body is a raw datagram. It is split, every header
//    parsed, and every Initial/0-RTT/Handshake/1-RTT packet opened with the
//    client's and then the server's Initial keys (RFC 9001 §5.2) for its
//    version; a packet that opens has its frames decoded. Seeds: RFC 9001
//    A.2 (client Initial) and A.3 (server Initial), which do open.
//  * flags bit 7 set: the body is a plaintext frame payload. It is sealed
//    into a packet (bits 0-1: Initial, 0-RTT, Handshake, 1-RTT; bit 2: QUIC
//    v2) under the client Initial keys and received as above, so the fuzzer
//    reaches the frame decoders through real packet protection; the packet
//    must open and give back exactly the payload.
//  * bit 3: we advertised max_datagram_frame_size (1200); bit 4: the peer
//    is the server (NEW_TOKEN, HANDSHAKE_DONE allowed); bits 5-6: the
//    short-header connection ID length for raw datagrams (0, 4, 8, 20).
// Checks: no trap; nothing consumed past the input; every span (packet,
// token, payload, frame data) inside its container; a frame re-encodes to
// its encoded size, and decoding that encoding re-encodes to the same bytes.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer it defines
// LLVMFuzzerTestOneInput; built plainly it replays files given as arguments.

import Core
import FuzzSupport
import QUIC

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Packets opened and frames decoded so far (reported by replay, to show
/// which seeds reach the frame decoders).
nonisolated(unsafe) var openedPackets = 0
nonisolated(unsafe) var decodedFrames = 0

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func inside(_ s: ByteSpan, _ start: Int, _ end: Int) -> Bool {
    s.count >= 0 && s.start >= start && s.end <= end
}

/// Decodes every frame of `payload` (in `packet`) and checks the round trip.
/// Returns how many frames decoded (nil if the payload failed).
@discardableResult
func decodeFrames(_ packet: UnsafeRawBufferPointer, _ payload: ByteSpan, _ kind: PacketKind,
                  _ options: FrameDecodingOptions) -> Int? {
    var count = 0
    do {
        var decoder = try FrameDecoder(payload, in: packet, kind: kind, options: options)
        while true {
            let before = decoder.position
            guard let frame = try decoder.next() else { break }
            check(decoder.position > before && decoder.position <= payload.end, "frame decoder did not advance within the payload")
            checkSpans(frame, payload)
            checkRoundTrip(frame, packet, options)
            count += 1
            decodedFrames += 1
        }
    } catch {
        check(error.code.rawValue <= 0x10, "frame error outside the transport registry")
        return nil
    }
    return count
}

func checkSpans(_ frame: Frame, _ payload: ByteSpan) {
    let spans: [ByteSpan]
    switch frame {
    case .crypto(let f): spans = [f.data]
    case .newToken(let t): spans = [t]
    case .stream(let f): spans = [f.data]
    case .connectionClose(let f): spans = [f.reasonPhrase]
    case .datagram(let f): spans = [f.data]
    case .ack(let f): spans = [f.additionalRanges]
    default: spans = []
    }
    for s in spans { check(inside(s, payload.start, payload.end), "frame span outside the payload") }
}

/// encode(frame) has the announced size; decode(encode(frame)) encodes to
/// the same bytes (integers canonicalised to their shortest form).
func checkRoundTrip(_ frame: Frame, _ source: UnsafeRawBufferPointer, _ options: FrameDecodingOptions) {
    let size = frame.encodedSize(source: source)
    var first = [UInt8](repeating: 0, count: size)
    let n = first.withUnsafeMutableBytes { frame.encode(source: source, into: $0) }
    check(n == size, "frame encoder wrote other than its size")
    var roundTripOptions = options
    roundTripOptions.maxDatagramFrameSize = UInt64.max
    let decoded: Frame
    do {
        decoded = try first.withUnsafeBytes { (b) throws -> Frame in
            let (f, next) = try Frame.decode(b, at: 0, end: b.count, options: roundTripOptions)
            check(next == b.count, "re-encoded frame did not decode to its end")
            return f
        }
    } catch {
        fatalError("invariant broken: re-encoded frame does not decode: \(error) \(frame)")
    }
    let second = first.withUnsafeBytes { src -> [UInt8] in
        var out = [UInt8](repeating: 0, count: decoded.encodedSize(source: src))
        _ = out.withUnsafeMutableBytes { decoded.encode(source: src, into: $0) }
        return out
    }
    check(first == second, "encode(decode(encode(frame))) differs from encode(frame)")
}

func packetKind(_ header: PacketHeader) -> PacketKind? {
    switch header {
    case .long(let h):
        switch h.type {
        case .initial: return .initial
        case .zeroRTT: return .zeroRTT
        case .handshake: return .handshake
        case .retry: return nil
        }
    case .short: return .oneRTT
    default: return nil
    }
}

/// Receives a datagram; returns the payloads of the packets that opened.
@discardableResult
func receive(_ datagram: [UInt8], dcid: ConnectionID, idLength: Int, shortHeaderVersion: QUICVersion = .v1,
             options: FrameDecodingOptions) -> [[UInt8]] {
    var opened: [[UInt8]] = []
    var headers: [PacketHeader] = []
    datagram.withUnsafeBytes { d in
        var packets = CoalescedPackets(d, shortHeaderIDLength: idLength)
        var last = 0
        while let item = packets.next() {
            switch item {
            case .packet(let h):
                check(inside(h.packet, last, d.count) && h.packet.count > 0, "packet span outside the datagram")
                last = h.packet.end
                switch h {
                case .long(let l):
                    check(inside(l.token, l.packet.start, l.packet.end), "token outside its packet")
                    check(l.packetNumberOffset >= l.packet.start && l.packetNumberOffset <= l.packet.end, "packet number outside its packet")
                case .retry(let r):
                    check(inside(r.retryToken, r.packet.start, r.packet.end) && r.integrityTag.count == 16, "bad Retry spans")
                    _ = RetryPacket.verify(r, in: d, originalDestinationID: dcid)
                case .versionNegotiation(let v):
                    check(inside(v.versions, v.packet.start, v.packet.end) && v.versions.count % 4 == 0, "bad version list")
                case .unsupportedVersion(let u):
                    var answer = [UInt8](repeating: 0, count: VersionNegotiation.size(for: u))
                    let n = answer.withUnsafeMutableBytes { VersionNegotiation.encode(answering: u, in: d, into: $0) }
                    check(n == answer.count, "Version Negotiation size mismatch")
                case .short(let s):
                    check(s.packetNumberOffset <= s.packet.end, "packet number outside its packet")
                }
                headers.append(h)
            case .dropped(_, let s):
                check(inside(s, last, d.count), "dropped span outside the datagram")
                last = s.end
            }
        }
        check(packets.remaining == 0, "bytes left unsplit")
    }
    for h in headers {
        guard let kind = packetKind(h) else { continue }
        let version: QUICVersion
        let pnOffset: Int
        switch h {
        case .long(let l): version = l.version; pnOffset = l.packetNumberOffset - l.packet.start
        case .short(let s): version = shortHeaderVersion; pnOffset = s.packetNumberOffset - s.packet.start
        default: continue
        }
        let keys = InitialKeys.derive(destinationID: dcid, version: version)
        for k in [keys.client, keys.server] {
            var packet = Array(datagram[h.packet.start..<h.packet.end])
            let result: PacketProtection.Opened? = packet.withUnsafeMutableBytes { p in
                do {
                    return try PacketProtection.open(p, packetNumberOffset: pnOffset, largestReceived: nil, keys: k)
                } catch {
                    return nil
                }
            }
            guard let result else { continue }
            check(inside(result.payload, 0, packet.count), "payload outside its packet")
            packet.withUnsafeBytes { decodeFrames($0, result.payload, kind, options) }
            opened.append(Array(packet[result.payload.start..<result.payload.end]))
            openedPackets += 1
            break
        }
    }
    return opened
}

/// Seals `payload` as a packet of `kind` and receives it.
func sealAndReceive(_ payload: [UInt8], dcid: ConnectionID, kind: PacketKind, version: QUICVersion,
                    options: FrameDecodingOptions) {
    var frames = payload
    let pnLength = 2
    let minimum = PacketProtection.minimumPayloadLength(packetNumberLength: pnLength)
    if frames.count < minimum { frames += [UInt8](repeating: 0, count: minimum - frames.count) }
    let keys = InitialKeys.derive(destinationID: dcid, version: version).client
    let headerSize: Int
    switch kind {
    case .oneRTT: headerSize = PacketHeaderEncoder.shortHeaderSize(destinationID: dcid, packetNumberLength: pnLength)
    default:
        headerSize = PacketHeaderEncoder.longHeaderSize(destinationID: dcid, sourceID: .empty, tokenLength: kind == .initial ? 0 : nil,
                                                        packetNumberLength: pnLength, payloadLength: frames.count)
    }
    var datagram = [UInt8](repeating: 0, count: headerSize + frames.count + PacketProtection.tagLength)
    let empty: [UInt8] = []
    datagram.withUnsafeMutableBytes { out in
        let h: Int = empty.withUnsafeBytes { token in
            switch kind {
            case .oneRTT:
                return PacketHeaderEncoder.encodeShort(destinationID: dcid, keyPhase: false, packetNumber: 0x1234,
                                                       packetNumberLength: pnLength, into: out)
            case .initial, .zeroRTT, .handshake:
                let type: LongPacketType = kind == .initial ? .initial : kind == .zeroRTT ? .zeroRTT : .handshake
                return PacketHeaderEncoder.encodeLong(type: type, version: version, destinationID: dcid, sourceID: .empty,
                                                      token: kind == .initial ? token : nil, packetNumber: 0x1234,
                                                      packetNumberLength: pnLength, payloadLength: frames.count, into: out)
            }
        }
        check(h == headerSize, "header size mismatch")
        frames.withUnsafeBytes { f in
            if f.count > 0 { (out.baseAddress! + h).copyMemory(from: f.baseAddress!, byteCount: f.count) }
        }
        let n = PacketProtection.seal(out, headerLength: h, payloadLength: frames.count, packetNumber: 0x1234, keys: keys)
        check(n == out.count, "sealed packet size mismatch")
    }
    let opened = receive(datagram, dcid: dcid, idLength: dcid.count, shortHeaderVersion: version, options: options)
    check(opened.count == 1 && opened[0] == frames, "a sealed packet did not open to its payload")
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard input.count >= 2 else { return }
    let flags = input[0]
    let idLength = Int(input[1]) % 21
    guard input.count >= 2 + idLength else { return }
    let dcid = ConnectionID(UnsafeRawBufferPointer(rebasing: input[2..<(2 + idLength)]))!
    let body = Array(input[(2 + idLength)...])
    // Bit 0x08: the negotiated extensions that change frame decoding (DATAGRAM, RESET_STREAM_AT).
    let options = FrameDecodingOptions(maxDatagramFrameSize: flags & 0x08 != 0 ? 1200 : nil, peerIsClient: flags & 0x10 == 0,
                                       resetStreamAt: flags & 0x08 != 0)
    if flags & 0x80 == 0 {
        let shortLengths = [0, 4, 8, 20]
        receive(body, dcid: dcid, idLength: shortLengths[Int(flags >> 5) & 3], options: options)
    } else {
        let kind = PacketKind.allCases[Int(flags & 3)]
        sealAndReceive(body, dcid: dcid, kind: kind, version: flags & 0x04 != 0 ? .v2 : .v1, options: options)
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_quic_packet_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzz)
}
#else
// A declaration rather than statements, so the file also parses in the
// -parse-as-library mode of the fuzzing build (where this branch is
// inactive but must still be valid library code). In a plain build it is
// top-level code and runs at start-up.
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { path, bytes in
    let (p, f) = (openedPackets, decodedFrames)
    fuzzOne(bytes)
    print("\(path): \(openedPackets - p) packets opened, \(decodedFrames - f) frames")
}
#endif
