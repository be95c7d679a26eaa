// A QUIC server endpoint: the connections behind one UDP socket (or a set
// of them), driven by the worker's UDP loop (RFC 9000 §5.2, §6, §14).
//
//     let endpoint = QUICEndpoint(configuration: c, connectionIDs: ids, makeHandshake: { tp in ... })
//     // each loop turn:
//     for (datagram, path) in received { endpoint.receive(datagram, path: path, now: now) }
//     endpoint.expire(now: now)
//     while let (connection, event) = endpoint.nextEvent() { application.handle(event, on: connection) }
//     while let (n, path) = endpoint.nextDatagram(into: buffer, now: now) { send(buffer[..<n], to: path) }
//     sleep until endpoint.nextDeadline or a socket is readable
//
// Routing (§5.2): a datagram goes to the connection that issued its
// Destination Connection ID (our IDs all have `connectionIDs.length`
// bytes, which is how a short header is read); a client's first Initials
// carry an ID the client chose, which routes to its connection until the
// handshake is confirmed. An unrouted Initial in a datagram of at least
// 1200 bytes (§14.1), of a version we speak, with a Destination Connection
// ID of at least 8 bytes (§7.2), makes a connection; a long header of a
// version we do not speak, in a datagram that could have held an Initial,
// gets a Version Negotiation packet (§6.1); everything else is dropped
// after parsing no more than its first header. No stateless reset is sent
// for unknown short headers yet (§10.3 "MAY").

import Core

public final class QUICEndpoint {
    let context: EndpointContext
    private let makeHandshake: (_ encodedTransportParameters: [UInt8]) -> (any CryptoHandshake)?
    /// Version Negotiation packets waiting to go (bounded: a flood of
    /// unknown versions costs at most this much memory).
    private var statelessQueue: [(bytes: [UInt8], path: DatagramPath)] = []
    static let maxStatelessQueue = 64
    private var expiredScratch: [QUICConnection] = []

    /// Graceful shutdown: when false, Initials for unknown connection IDs
    /// are dropped (the client retries elsewhere or times out).
    public var acceptsNewConnections = true

    public init(configuration: QUICConfiguration, connectionIDs: ConnectionIDSource,
                makeHandshake: @escaping (_ encodedTransportParameters: [UInt8]) -> (any CryptoHandshake)?) {
        precondition(connectionIDs.length >= 8 && connectionIDs.length <= ConnectionID.maxLength,
                     "server connection IDs of 8 to 20 bytes (§7.2, §17.2)")
        context = EndpointContext(configuration: configuration, connectionIDs: connectionIDs)
        self.makeHandshake = makeHandshake
    }

    deinit {
        // Break the connection ↔ context references.
        context.routes.removeAll()
        context.connections.removeAll()
    }

    public var connectionCount: Int { context.connections.count }

    public func receive(_ datagram: UnsafeMutableRawBufferPointer, path: DatagramPath, now: Instant) {
        guard datagram.count > 0 else { return }
        let idLength = context.connectionIDs.length
        if datagram[0] & 0x80 == 0 {
            // Short header: the Destination Connection ID is one of ours.
            guard datagram.count > idLength,
                  let id = ConnectionID(UnsafeRawBufferPointer(rebasing: datagram[1..<(1 + idLength)])),
                  let connection = context.routes[id] else { return }
            connection.receive(datagram, path: path, now: now)
            return
        }
        let header: PacketHeader
        do {
            header = try PacketHeader.decode(UnsafeRawBufferPointer(datagram), at: 0, shortHeaderIDLength: idLength)
        } catch {
            return
        }
        switch header {
        case .long(let h):
            if let connection = context.routes[h.destinationID] {
                connection.receive(datagram, path: path, now: now)
                return
            }
            guard context.configuration.supportedVersions.contains(h.version) else {
                answerWithVersionNegotiation(datagram, path: path)
                return
            }
            guard h.type == .initial, acceptsNewConnections,
                  datagram.count >= VersionNegotiation.minimumDatagramSize,
                  h.destinationID.count >= 8 else { return }
            guard let connection = QUICConnection(context: context, version: h.version, originalDestinationID: h.destinationID,
                                                  peerSourceID: h.sourceID, path: path, now: now,
                                                  makeHandshake: makeHandshake) else { return }
            context.connections[ObjectIdentifier(connection)] = connection
            connection.receive(datagram, path: path, now: now)
            // Noise shaped like an Initial (no packet in it authenticated,
            // RFC 9001 §5.2: Initial keys come from the client's connection
            // ID, so only a real client's packet opens) leaves no state: it
            // would otherwise hold a connection until the idle timeout, and
            // keep a stopping worker waiting for it. (A packet that opened
            // but failed, say the TLS handshake, left the connection closing
            // with its CONNECTION_CLOSE to send.)
            guard connection.hasReceivedPacket || !connection.isOpen else {
                connection.terminate()
                return
            }
            connection.scheduleUpdate()
        case .unsupportedVersion:
            answerWithVersionNegotiation(datagram, path: path)
        case .short, .retry, .versionNegotiation:
            return  // §6.1: never answer a Version Negotiation packet
        }
    }

    /// §6.1: a Version Negotiation packet for a long header of a version we
    /// do not speak, if the datagram could have held a client's Initial.
    private func answerWithVersionNegotiation(_ datagram: UnsafeMutableRawBufferPointer, path: DatagramPath) {
        guard VersionNegotiation.shouldAnswerUnsupportedVersion(datagramLength: datagram.count),
              statelessQueue.count < Self.maxStatelessQueue else { return }
        let bytes = UnsafeRawBufferPointer(datagram)
        // Invariant fields (RFC 8999 §5.1), already checked by the header parser.
        let dcidLength = Int(bytes[5])
        let scidAt = 6 + dcidLength
        let header = UnsupportedVersionHeader(version: QUICVersion(rawValue: 0),
                                              destinationID: ByteSpan(offset: 6, length: dcidLength),
                                              sourceID: ByteSpan(offset: scidAt + 1, length: Int(bytes[scidAt])),
                                              packet: ByteSpan(offset: 0, length: bytes.count))
        let versions = context.configuration.supportedVersions
        var out = [UInt8](repeating: 0, count: VersionNegotiation.size(for: header, versions: versions))
        out.withUnsafeMutableBytes {
            _ = VersionNegotiation.encode(answering: header, in: bytes, versions: versions,
                                          unusedBits: UInt8(truncatingIfNeeded: bytes.count), into: $0)
        }
        statelessQueue.append((out, path))
    }

    public func nextEvent() -> (QUICConnection, QUICEvent)? { context.nextEvent() }

    public func nextDatagram(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> (length: Int, path: DatagramPath)? {
        if !statelessQueue.isEmpty {
            let (bytes, path) = statelessQueue.removeFirst()
            precondition(buffer.count >= bytes.count, "datagram buffer smaller than maxUDPPayloadSize")
            bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return (bytes.count, path)
        }
        while let connection = context.nextReady() {
            let written = connection.writeDatagram(into: buffer, now: now)
            context.deadlines.arm(connection, at: connection.nextDeadline)
            if let written {
                context.wantsToSend(connection)  // round-robin: back of the queue
                return (written, connection.path)
            }
        }
        return nil
    }

    public var nextDeadline: Instant? { context.deadlines.peek() }

    public func expire(now: Instant) {
        expiredScratch.removeAll(keepingCapacity: true)
        context.deadlines.popExpired(now: now) { expiredScratch.append($0) }
        for connection in expiredScratch { connection.expire(now: now) }
        expiredScratch.removeAll(keepingCapacity: true)
    }
}
