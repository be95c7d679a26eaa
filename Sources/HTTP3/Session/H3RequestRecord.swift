// What the session keeps per open request stream, and the IDs of request
// streams recently closed.

import HTTPFields

/// One request stream: its receiving machine and how far each direction got.
/// A class, so the session mutates it in place through the dictionary.
final class H3RequestRecord {
    enum Response: Equatable {
        /// No final head yet (interim 1xx heads may have gone out).
        case awaitingHead
        case headSent
        case trailersSent
        /// `endResponse`: the glue sent (or sends) FIN.
        case ended
    }

    let id: UInt64
    var machine: H3RequestStream
    /// Every byte up to the client's FIN has been consumed; the FIN is known
    /// even if the machine could not take it yet (a blocked field section).
    var finSeen = false
    /// Its current field section is held by the QPACK decoder, waiting for
    /// inserts (RFC 9204 §2.1.2).
    var awaitingInserts = false
    /// The request side is over: read to its FIN, or abandoned by us
    /// (`stopReading`). Later bytes are dropped.
    var requestDone = false
    /// The end of the request went out in an event (`endStream`, trailers).
    var endReported = false
    var response = Response.awaitingHead
    /// The first varint of the stream was looked at for the WebTransport
    /// signal (only when WebTransport is on).
    var signalChecked = false
    /// The first varint's bytes while it is incomplete.
    var signalPrefix: [UInt8] = []
    /// Opened at or above our GOAWAY identifier with WebTransport on: a
    /// WebTransport stream is handed over, anything else refused
    /// (H3_REQUEST_REJECTED) once its first bytes arrive.
    var refuseUnlessWebTransport = false

    init(id: UInt64, allowConnectProtocol: Bool, frameLimits: H3FrameReader.Limits) {
        self.id = id
        machine = H3RequestStream(allowConnectProtocol: allowConnectProtocol, limits: frameLimits)
    }

    /// A field section is being decoded (possibly blocked on QPACK inserts):
    /// the stream reads nothing until it is.
    var isDecoding: Bool { machine.state == .decodingHead || machine.state == .decodingTrailers }

    /// Both directions are finished: the record can go.
    var isComplete: Bool { requestDone && response == .ended }
}

/// The last `capacity` request stream IDs closed, oldest overwritten first.
struct ClosedStreamIDs {
    private var ids: [UInt64] = []
    private var next = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    mutating func remember(_ id: UInt64) {
        if ids.count < capacity {
            ids.append(id)
        } else {
            ids[next] = id
            next = (next + 1) % capacity
        }
    }

    func contains(_ id: UInt64) -> Bool { ids.contains(id) }

    /// The IDs remembered, oldest first.
    var remembered: [UInt64] {
        let ordered = ids.count < capacity ? ids : Array(ids[next...] + ids[..<next])
        return ordered.filter { $0 != UInt64.max }
    }

    /// Forgets `id`: its slot holds a value no stream ID can take (they are
    /// below 2^62).
    mutating func forget(_ id: UInt64) {
        if let i = ids.firstIndex(of: id) { ids[i] = UInt64.max }
    }
}
