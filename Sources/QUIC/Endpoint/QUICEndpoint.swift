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
// after parsing no more than its first header, except a short header for
// an unknown connection ID, which gets a Stateless Reset (§10.3,
// StatelessReset.swift: smaller than its trigger, rate-limited).
//
// Address validation (§8.1) and floods. A new connection is half-open until
// its handshake completes. An Initial without a valid token (Token field
// empty, or a token that does not open, expired, or is bound to another
// address) gets a Retry (§8.1.2, §17.2.5) instead of a connection when
// `alwaysRetry` is set or `retryThreshold` connections are half-open: the
// Retry costs no state, and carries a token (AddressTokens) the client
// echoes in its next Initial, which then makes the connection with its
// address validated (no anti-amplification limit) and the Retry's IDs in
// the transport parameters (§7.3). A valid NEW_TOKEN token (§8.1.3) also
// validates; each is accepted once per endpoint (a bounded memory of
// recent ones, §8.1.4 "prevented or limited"), a reused one counts as no
// token. Invalid tokens are treated as absent (§8.1.3 "SHOULD proceed as
// if the client did not have a validated address"), except that when a
// Retry is due an invalid Retry token (expired, another address) is not
// answered with a second Retry, which the client would discard
// (§17.2.5.2): the Initial is dropped and the client times out — the
// INVALID_TOKEN outcome (§8.1.2) without a connection to send it from.
//
// `maxHalfOpenConnections` bounds memory: at the cap, every Initial without
// a valid token gets a Retry whatever the settings, and a validated one
// evicts the oldest half-open connection (silently: an attacker cannot
// validate spoofed addresses, so the evicted are floods, and a real client
// whose handshake is evicted retransmits into a new one).

import Core

public final class QUICEndpoint {
    let context: EndpointContext
    private let makeHandshake: (_ encodedTransportParameters: [UInt8]) -> (any CryptoHandshake)?
    /// Version Negotiation packets waiting to go (bounded: a flood of
    /// unknown versions costs at most this much memory).
    private var statelessQueue: [(bytes: [UInt8], path: DatagramPath)] = []
    static let maxStatelessQueue = 64
    private var resets: StatelessResetSender
    /// NEW_TOKEN tokens already used here (§8.1.4), oldest first.
    private var usedTokens = Set<TokenNonce>()
    private var usedTokenOrder: [TokenNonce] = []
    private var usedTokenHead = 0
    static let maxRememberedTokens = 4096
    private var expiredScratch: [QUICConnection] = []

    /// Graceful shutdown: when false, Initials for unknown connection IDs
    /// are dropped (the client retries elsewhere or times out).
    public var acceptsNewConnections = true

    /// `tokenSecret`: the secret address-validation tokens are sealed
    /// with (shared by the workers that must accept each other's tokens);
    /// nil draws one for this endpoint alone.
    public init(configuration: QUICConfiguration, connectionIDs: ConnectionIDSource, tokenSecret: [UInt8]? = nil,
                makeHandshake: @escaping (_ encodedTransportParameters: [UInt8]) -> (any CryptoHandshake)?) {
        precondition(connectionIDs.length >= 8 && connectionIDs.length <= ConnectionID.maxLength,
                     "server connection IDs of 8 to 20 bytes (§7.2, §17.2)")
        let secret = tokenSecret ?? (0..<32).map { _ in UInt8.random(in: 0...255) }
        context = EndpointContext(configuration: configuration, connectionIDs: connectionIDs,
                                  addressTokens: AddressTokens(secret: secret))
        resets = StatelessResetSender(perSecond: configuration.statelessResetsPerSecond)
        self.makeHandshake = makeHandshake
    }

    deinit {
        // Break the connection ↔ context references.
        context.routes.removeAll()
        context.connections.removeAll()
    }

    public var connectionCount: Int { context.connections.count }
    /// Connections whose handshake is under way (§8.1: what Retry counts).
    public var halfOpenConnectionCount: Int { context.halfOpenCount }

    /// `ecn`: the ECN field of the datagram's IP header (RFC 9000 §13.4.1).
    public func receive(_ datagram: UnsafeMutableRawBufferPointer, path: DatagramPath, ecn: ECNCodepoint = .notECT,
                        now: Instant) {
        guard datagram.count > 0 else { return }
        let idLength = context.connectionIDs.length
        if datagram[0] & 0x80 == 0 {
            // Short header: the Destination Connection ID is one of ours.
            guard datagram.count > idLength,
                  let id = ConnectionID(UnsafeRawBufferPointer(rebasing: datagram[1..<(1 + idLength)])) else { return }
            guard let connection = context.routes[id] else {
                answerWithStatelessReset(for: id, triggerLength: datagram.count, path: path, now: now)
                return
            }
            connection.receive(datagram, path: path, ecn: ecn, now: now)
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
                connection.receive(datagram, path: path, ecn: ecn, now: now)
                return
            }
            guard context.configuration.supportedVersions.contains(h.version) else {
                answerWithVersionNegotiation(datagram, path: path)
                return
            }
            guard h.type == .initial, acceptsNewConnections,
                  datagram.count >= VersionNegotiation.minimumDatagramSize else { return }
            let validation = h.token.count == 0 ? .invalid
                : context.addressTokens.validate(UnsafeRawBufferPointer(datagram).slice(h.token), address: path.peer,
                                                 destinationID: h.destinationID, now: now)
            var originalDestinationID = h.destinationID
            var retrySourceID: ConnectionID?
            var validated = false
            switch validation {
            case .retry(let odcid, let rscid):
                (originalDestinationID, retrySourceID, validated) = (odcid, rscid, true)
                abandonEarlierAttempt(odcid, from: path.peer)
            case .newToken(let nonce):
                validated = rememberToken(nonce)
            case .invalid:
                break
            }
            // §7.2: a client's first Destination Connection ID has 8 bytes or more.
            guard originalDestinationID.count >= 8 else { return }
            let config = context.configuration
            // At --max-connections nothing new is taken on, not even a
            // Retry: the client's Initials are retransmitted until a
            // connection ends, as a TCP client waits in the accept queue.
            guard context.connections.count < max(1, config.maxConnections) else { return }
            let cap = max(1, config.maxHalfOpenConnections)
            if !validated {
                guard !(config.alwaysRetry || context.halfOpenCount >= min(config.retryThreshold, cap)) else {
                    // A failed Retry token is not answered (the client
                    // takes one Retry only); anything else, a NEW_TOKEN
                    // token or another server's included, gets one.
                    if h.token.count == 0 || datagram[h.token.start] != AddressTokens.Kind.retry.rawValue {
                        answerWithRetry(h, path: path, now: now)
                    }
                    return
                }
            } else if context.halfOpenCount >= cap {
                evictOldestHalfOpen()
            }
            // The connection's own state is kept for its life (AllocationZone).
            let zone = AllocationZone.connection.enter()
            let made = QUICConnection(context: context, version: h.version, originalDestinationID: originalDestinationID,
                                      initialDestinationID: h.destinationID, retrySourceID: retrySourceID,
                                      addressValidated: validated, peerSourceID: h.sourceID, path: path, now: now,
                                      makeHandshake: makeHandshake)
            AllocationZone.restore(zone)
            guard let connection = made else { return }
            context.connections[ObjectIdentifier(connection)] = connection
            context.halfOpenStarted(connection)
            connection.receive(datagram, path: path, ecn: ecn, now: now)
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

    /// §17.2.5: a Retry for `h`'s client, with a token for its next
    /// Initial. Its Source Connection ID is a fresh ID of ours: the
    /// client's next Initial is addressed to it, so it routes to this
    /// worker, and §7.3 requires it in retry_source_connection_id.
    private func answerWithRetry(_ h: LongHeader, path: DatagramPath, now: Instant) {
        guard statelessQueue.count < Self.maxStatelessQueue else { return }
        let retrySourceID = context.connectionIDs.newConnectionID()
        let token = context.addressTokens.mintRetry(address: path.peer, originalDestinationID: h.destinationID,
                                                    retrySourceID: retrySourceID, now: now)
        var out = [UInt8](repeating: 0, count: RetryPacket.size(destinationID: h.sourceID, sourceID: retrySourceID,
                                                                 tokenLength: token.count))
        out.withUnsafeMutableBytes { o in
            token.withUnsafeBytes { t in
                _ = RetryPacket.encode(version: h.version, destinationID: h.sourceID, sourceID: retrySourceID, token: t,
                                       originalDestinationID: h.destinationID, unusedBits: UInt8.random(in: 0...15), into: o)
            }
        }
        statelessQueue.append((out, path))
    }

    /// §10.3: a Stateless Reset for a short header nobody here owns.
    private func answerWithStatelessReset(for id: ConnectionID, triggerLength: Int, path: DatagramPath, now: Instant) {
        guard let size = StatelessResetSender.size(answering: triggerLength),
              statelessQueue.count < Self.maxStatelessQueue, resets.allow(now: now) else { return }
        statelessQueue.append((StatelessResetSender.encode(token: context.connectionIDs.resetToken(for: id), size: size), path))
    }

    /// Records a NEW_TOKEN token's first use; false if it was used before
    /// (§8.1.4: replay limited to one connection per endpoint, within the
    /// last `maxRememberedTokens` uses).
    private func rememberToken(_ nonce: TokenNonce) -> Bool {
        guard usedTokens.insert(nonce).inserted else { return false }
        if usedTokenOrder.count < Self.maxRememberedTokens {
            usedTokenOrder.append(nonce)
        } else {
            usedTokens.remove(usedTokenOrder[usedTokenHead])
            usedTokenOrder[usedTokenHead] = nonce
            usedTokenHead = (usedTokenHead + 1) % Self.maxRememberedTokens
        }
        return true
    }

    /// At the half-open cap: the oldest handshake under way goes, without a
    /// word (a scan, only ever at the cap and for a validated client).
    /// The client took a Retry of ours for the attempt whose first
    /// Destination Connection ID was `odcid`. A connection made from
    /// another of that attempt's Initials (sent before the Retry reached the
    /// client, and let in because the half-open count had meanwhile fallen
    /// below the Retry threshold) will never hear from the client again: it
    /// now talks to the connection its token makes (§17.2.5.2: one Retry
    /// per attempt, and the Initial it then sends goes to the Retry's SCID).
    /// Left alone, such a connection stays half-open until the idle timeout,
    /// counts against the Retry threshold and holds a stopping worker; after
    /// a burst of 200 handshakes on one worker there were about 50. The
    /// token is bound to the address, and only a handshake still under way
    /// from that same address is ended.
    private func abandonEarlierAttempt(_ odcid: ConnectionID, from peer: SocketAddress) {
        guard let earlier = context.routes[odcid], earlier.isHalfOpen, earlier.current.path.peer == peer else { return }
        earlier.terminate()
    }

    private func evictOldestHalfOpen() {
        var oldest: QUICConnection?
        for c in context.connections.values where c.isHalfOpen {
            if oldest == nil || c.createdAt < oldest!.createdAt { oldest = c }
        }
        oldest?.terminate()
    }

    public func nextEvent() -> (QUICConnection, QUICEvent)? { context.nextEvent() }

    public func nextDatagram(into buffer: UnsafeMutableRawBufferPointer, now: Instant) -> (length: Int, path: DatagramPath)? {
        if !statelessQueue.isEmpty {
            let (bytes, path) = statelessQueue.removeFirst()
            precondition(buffer.count >= bytes.count, "datagram buffer smaller than maxUDPPayloadSize")
            bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            lastDatagramECN = .notECT
            lastDatagramIsPMTUProbe = false
            return (bytes.count, path)
        }
        while let connection = context.nextReady() {
            let written = connection.writeDatagram(into: buffer, now: now)
            context.deadlines.arm(connection, at: connection.nextDeadline)
            if let written {
                context.wantsToSend(connection)  // round-robin: back of the queue
                lastDatagramECN = connection.sendingECN
                lastDatagramIsPMTUProbe = connection.sendingPMTUProbe
                return written  // to the path it was written for (RFC 9000 §9)
            }
        }
        return nil
    }

    /// The ECN codepoint the datagram `nextDatagram` last returned must
    /// carry in its IP header (RFC 9000 §13.4.2: ECT(0) while its
    /// connection's path is tested or ECN-capable).
    public private(set) var lastDatagramECN = ECNCodepoint.notECT

    /// Congestion reactions to ECN-CE (RFC 9002 §7.1) and ECN validation
    /// failures (RFC 9000 §13.4.2.2) of this endpoint's connections so far.
    public var ecnCongestionSignals: Int { context.ecnCongestionSignals }
    public var ecnValidationFailures: Int { context.ecnValidationFailures }

    /// The datagram `nextDatagram` last returned is a path MTU probe (RFC
    /// 8899): larger than any datagram confirmed on its path, so it must
    /// leave alone, never as a segment of a GSO run.
    public private(set) var lastDatagramIsPMTUProbe = false

    /// Datagram sizes raised by path MTU discovery, and black holes that
    /// sent a connection back to 1200 bytes, so far.
    public var pmtuRaises: Int { context.pmtuRaises }
    public var pmtuBlackHoles: Int { context.pmtuBlackHoles }

    public var nextDeadline: Instant? { context.deadlines.peek() }

    public func expire(now: Instant) {
        expiredScratch.removeAll(keepingCapacity: true)
        context.deadlines.popExpired(now: now) { expiredScratch.append($0) }
        for connection in expiredScratch { connection.expire(now: now) }
        expiredScratch.removeAll(keepingCapacity: true)
    }
}
