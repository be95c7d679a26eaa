// Connection IDs of both ends (RFC 9000 §5.1).
//
// Ours: sequence 0 is the Source Connection ID of our first Initial; more
// are issued with NEW_CONNECTION_ID up to the peer's
// active_connection_id_limit (§5.1.1), each with the stateless reset token
// the ID source derives for it (§10.3). A RETIRE_CONNECTION_ID from the peer
// retires one (it stops routing) and a fresh one replaces it. Retiring a
// sequence number never issued, or the ID the RETIRE_CONNECTION_ID's own
// packet was sent to, is a PROTOCOL_VIOLATION (§19.16).
//
// Theirs: the client's Initial Source Connection ID is sequence 0; it can
// give more with NEW_CONNECTION_ID. We use one at a time (the newest not
// retired); Retire Prior To makes us retire older ones with
// RETIRE_CONNECTION_ID (§5.1.2), and holding more than our
// active_connection_id_limit is a CONNECTION_ID_LIMIT_ERROR (§5.1.1). The
// reset tokens of its IDs let us recognise a stateless reset (§10.3.1).

struct LocalConnectionIDs {
    struct Issued {
        var sequence: UInt64
        var id: ConnectionID
        var resetToken: StatelessResetToken
    }

    private(set) var active: [Issued] = []
    private(set) var nextSequence: UInt64 = 0
    /// Sequence numbers whose NEW_CONNECTION_ID is owed.
    var pendingAnnouncements: [UInt64] = []

    mutating func issue(_ id: ConnectionID, token: StatelessResetToken, announce: Bool) {
        active.append(Issued(sequence: nextSequence, id: id, resetToken: token))
        if announce { pendingAnnouncements.append(nextSequence) }
        nextSequence += 1
    }

    func issued(sequence: UInt64) -> Issued? { active.first { $0.sequence == sequence } }

    /// RETIRE_CONNECTION_ID (§19.16). Returns the retired ID, or nil if it
    /// was retired already.
    mutating func retire(sequence: UInt64, packetDestination: ConnectionID) throws(QUICError) -> ConnectionID? {
        guard sequence < nextSequence else { throw .retireUnissuedConnectionID }
        guard let i = active.firstIndex(where: { $0.sequence == sequence }) else { return nil }
        guard active[i].id != packetDestination else { throw .retireConnectionIDInUse }
        pendingAnnouncements.removeAll { $0 == sequence }
        return active.remove(at: i).id
    }
}

struct PeerConnectionIDs {
    struct Known {
        var sequence: UInt64
        var id: ConnectionID
        var resetToken: StatelessResetToken?
    }

    private(set) var known: [Known]
    private(set) var retirePriorTo: UInt64 = 0
    /// Sequence numbers whose RETIRE_CONNECTION_ID is owed.
    var pendingRetirements: [UInt64] = []
    /// The ID we send to.
    private(set) var current: ConnectionID

    init(initial: ConnectionID) {
        known = [Known(sequence: 0, id: initial, resetToken: nil)]
        current = initial
    }

    /// NEW_CONNECTION_ID (§19.15). `limit`: our active_connection_id_limit.
    mutating func receive(_ f: NewConnectionIDFrame, limit: UInt64) throws(QUICError) {
        // §19.15: "An endpoint that is sending packets with a zero-length
        // Destination Connection ID MUST treat receipt of a
        // NEW_CONNECTION_ID frame as a connection error of type PROTOCOL_VIOLATION."
        guard !current.isEmpty else { throw .newConnectionIDWithEmptyID }
        if let same = known.first(where: { $0.sequence == f.sequenceNumber }) {
            // "... the same sequence number with a different ID ... PROTOCOL_VIOLATION."
            guard same.id == f.connectionID && same.resetToken == f.statelessResetToken else { throw .newConnectionIDConflict }
            return
        }
        if f.sequenceNumber < retirePriorTo {
            // §19.15: a frame for an already-retired sequence number is
            // answered with RETIRE_CONNECTION_ID at once.
            pendingRetirements.append(f.sequenceNumber)
            return
        }
        known.append(Known(sequence: f.sequenceNumber, id: f.connectionID, resetToken: f.statelessResetToken))
        if f.retirePriorTo > retirePriorTo {
            retirePriorTo = f.retirePriorTo
            for k in known where k.sequence < retirePriorTo { pendingRetirements.append(k.sequence) }
            known.removeAll { $0.sequence < retirePriorTo }
        }
        // §5.1.1: "... more connection IDs than its active_connection_id_limit
        // ... CONNECTION_ID_LIMIT_ERROR."
        guard UInt64(known.count) <= limit else { throw .connectionIDLimitExceeded }
        if !known.contains(where: { $0.id == current }), let next = known.min(by: { $0.sequence < $1.sequence }) {
            current = next.id
        }
    }

    /// Sequence numbers handed to another path (claimUnused), not to be
    /// handed out twice.
    private(set) var claimed: [UInt64] = []

    /// §9.5: an ID never used yet, for sending on a new path ("MUST NOT
    /// reuse a connection ID when sending to more than one destination
    /// address"); nil when the peer gave us no spare.
    mutating func claimUnused() -> ConnectionID? {
        let inUse = known.first { $0.id == current }?.sequence ?? 0
        var best: Known?
        for k in known where k.sequence > inUse && !claimed.contains(k.sequence) {
            if best == nil || k.sequence < best!.sequence { best = k }
        }
        guard let best else { return nil }
        claimed.append(best.sequence)
        return best.id
    }

    /// Sends to `id` from now on (the current path moved); the ID used
    /// until now is retired (§5.1.2), so the peer can issue another.
    mutating func use(_ id: ConnectionID) {
        guard id != current, let next = known.first(where: { $0.id == id }) else { return }
        if let old = known.firstIndex(where: { $0.id == current }), known[old].sequence < next.sequence {
            pendingRetirements.append(known[old].sequence)
            known.remove(at: old)
        }
        claimed.removeAll { $0 == next.sequence }
        current = id
    }

    /// Whether the 16 bytes at the end of an undecryptable packet are the
    /// reset token of one of the peer's IDs (§10.3.1).
    func isStatelessReset(_ token: StatelessResetToken) -> Bool {
        known.contains { $0.resetToken == token }
    }
}

extension QUICError {
    public static let retireUnissuedConnectionID = QUICError(code: .protocolViolation, reason: "RETIRE_CONNECTION_ID for a sequence number never issued")
    public static let retireConnectionIDInUse = QUICError(code: .protocolViolation, reason: "RETIRE_CONNECTION_ID for the ID its packet was sent to")
    public static let newConnectionIDWithEmptyID = QUICError(code: .protocolViolation, reason: "NEW_CONNECTION_ID while using a zero-length connection ID")
    public static let newConnectionIDConflict = QUICError(code: .protocolViolation, reason: "NEW_CONNECTION_ID reusing a sequence number for another ID")
    public static let connectionIDLimitExceeded = QUICError(code: .connectionIDLimitError, reason: "more connection IDs than active_connection_id_limit")
    // RFC 9000 §13.1: "An endpoint SHOULD treat receipt of an acknowledgment
    // for a packet it did not send as a connection error of type PROTOCOL_VIOLATION."
    public static let ackOfUnsentPacket = QUICError(code: .protocolViolation, reason: "ACK of a packet never sent")
    // §7.3: "An endpoint MUST treat the absence of the
    // initial_source_connection_id transport parameter from either endpoint
    // or the absence of the original_destination_connection_id transport
    // parameter from the server as a connection error of type
    // TRANSPORT_PARAMETER_ERROR"; "... MUST treat the following as a
    // connection error of type TRANSPORT_PARAMETER_ERROR or PROTOCOL_VIOLATION:
    // a mismatch between values received from a peer in these transport
    // parameters and the value sent in the corresponding Destination or
    // Source Connection ID fields of Initial packets."
    public static let initialSourceConnectionIDMismatch = QUICError(code: .transportParameterError, reason: "initial_source_connection_id differs from the Initial's Source Connection ID")
    // RFC 9001 §8.2: "... the absence of the quic_transport_parameters
    // extension ... MUST ... close the connection with ... 0x016d" — the
    // handshake refuses such a hello itself; this covers a handshake that
    // completes without parameters.
    public static let missingTransportParameters = QUICError(code: .transportParameterError, reason: "handshake completed without transport parameters")
}
