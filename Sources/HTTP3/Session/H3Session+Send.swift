// Output on request streams: response heads, DATA frame headers, trailers
// (RFC 9114 §4.1, §7.2.1, §7.2.2), the end of a response, giving a stream up;
// and GOAWAY on our control stream (§5.2).
//
// The session frames, the glue writes: each call appends bytes to the glue's
// buffer for that stream. A body is never copied — `writeDataHeader` gives
// the DATA frame header to put in front of a slice the glue writes from the
// application's own buffer. Field sections go through the QPACK encoder
// (static table and literals, RFC 9204 §4.5; see QPACKEncoder), with names
// lower-cased and the HTTP/1.1 connection-specific fields dropped (§4.2:
// "An endpoint MUST NOT generate an HTTP/3 field section containing
// connection-specific fields").
//
// Calls for a stream the session no longer has (reset by the client, refused,
// failed) append nothing: the glue learnt of it through an event.

import Core
import HTTPFields

extension H3Session {
    /// Starts a response head: `status` 1xx (interim: may repeat; not 101,
    /// which HTTP/3 does not have: §4.5) or a final status (once).
    public func beginHeaders(streamID: UInt64, status: Int) {
        precondition(outgoing == nil, "beginHeaders while another field section is open")
        precondition(status >= 100 && status <= 999 && status != 101, "invalid HTTP/3 status")
        let r = writable(streamID)
        if let r { precondition(r.response == .awaitingHead, "second final response head") }
        outgoing = OutgoingSection(streamID: streamID, informational: status < 200, trailers: false, discard: r == nil, size: 0)
        sendSection.removeAll(keepingCapacity: true)
        encoder.beginSection(into: &sendSection)
        Self.encodeStatus(status, encoder, into: &sendSection)
        outgoing!.size = Self.statusName.utf8CodeUnitCount + 3 + QPACKDynamicTable.entryOverhead
    }

    /// Starts trailers, after the final head and the body.
    public func beginTrailers(streamID: UInt64) {
        precondition(outgoing == nil, "beginTrailers while another field section is open")
        let r = writable(streamID)
        if let r { precondition(r.response == .headSent, "trailers before the response head, or twice") }
        outgoing = OutgoingSection(streamID: streamID, informational: false, trailers: true, discard: r == nil, size: 0)
        sendSection.removeAll(keepingCapacity: true)
        encoder.beginSection(into: &sendSection)
    }

    /// Adds a field to the open section. The name is lower-cased here;
    /// connection, keep-alive, proxy-connection, transfer-encoding and
    /// upgrade are dropped. set-cookie and authorization go out with the
    /// never-indexed bit (RFC 9204 §4.5.4), as over HTTP/2. Spaces and tabs
    /// around the value are left out (FieldSyntax.trimmingWhitespace): a
    /// client treats a value with them as malformed (RFC 9114 §4.1.2;
    /// aioquic closes the connection).
    public func addField(name: UnsafeRawBufferPointer, value untrimmed: UnsafeRawBufferPointer) {
        guard let section = outgoing else { preconditionFailure("addField outside beginHeaders/endHeaders") }
        guard !section.discard else { return }
        let value = FieldSyntax.trimmingWhitespace(untrimmed)
        nameScratch.removeAll(keepingCapacity: true)
        for c in name { nameScratch.append(FieldSyntax.lower(c)) }
        nameScratch.withUnsafeBytes { lower in
            if Self.isConnectionSpecific(lower) { return }
            encoder.encode(name: lower, value: value, neverIndexed: Self.isSensitive(lower), into: &sendSection)
            outgoing!.size += lower.count + value.count + QPACKDynamicTable.entryOverhead
        }
    }

    /// Frames the open section as one HEADERS frame appended to `out`.
    /// - Returns: false if the section is over the client's
    ///   SETTINGS_MAX_FIELD_SECTION_SIZE (§4.2.2: "SHOULD NOT send"): nothing
    ///   is appended and the response is where it was, so the glue may send
    ///   a smaller one (a 500 for a head; no trailers). True otherwise, also
    ///   when the stream is gone (then nothing is appended).
    public func endHeaders(into out: inout [UInt8]) -> Bool {
        guard let section = outgoing else { preconditionFailure("endHeaders without beginHeaders") }
        outgoing = nil
        guard !section.discard, let r = writable(section.streamID) else { return true }
        if let max = peerSettings?.maxFieldSectionSize, UInt64(section.size) > max { return false }
        sendSection.withUnsafeBytes { H3FrameEncoder.appendHeaders($0, to: &out) }
        if sendSection.capacity > 16 * 1024 { sendSection = [] }
        if section.trailers {
            r.response = .trailersSent
        } else if !section.informational {
            r.response = .headSent
        }
        return true
    }

    /// Appends the header of a DATA frame of `length` bytes (§7.2.1); the
    /// glue writes the `length` body bytes right after it.
    /// - Returns: false (nothing appended) if the stream is gone.
    public func writeDataHeader(streamID: UInt64, length: Int, into out: inout [UInt8]) -> Bool {
        precondition(outgoing == nil, "DATA inside a field section")
        guard let r = writable(streamID) else { return false }
        precondition(r.response == .headSent, "DATA before the response head or after trailers")
        H3FrameEncoder.appendDataHeader(length: length, to: &out)
        return true
    }

    /// Whether the stream still takes a response from us.
    public func canSend(streamID: UInt64) -> Bool { writable(streamID) != nil }

    /// The response is complete (after the head, the body, maybe trailers):
    /// the glue closes the stream for sending (FIN, §4.1 "After sending a
    /// final response, the server MUST close the stream for sending").
    public func endResponse(streamID: UInt64) {
        precondition(outgoing == nil, "endResponse inside a field section")
        guard let r = writable(streamID) else { return }
        precondition(r.response == .headSent || r.response == .trailersSent, "endResponse without a final head")
        r.response = .ended
        if r.isComplete { remove(streamID) }
    }

    /// The request body is not wanted (a complete response was sent before
    /// the request ended, §4.1): the glue sends STOP_SENDING with
    /// H3_NO_ERROR; later bytes for the stream are dropped.
    public func stopReading(streamID: UInt64) {
        guard failure == nil, let r = requests[streamID], !r.requestDone else { return }
        abandonReading(r)
        if r.isComplete { remove(streamID) }
    }

    /// Gives the stream up both ways (the application failed, or will not
    /// answer): the glue sends RESET_STREAM and STOP_SENDING, with
    /// H3_REQUEST_REJECTED if the application never saw the request and
    /// H3_REQUEST_CANCELLED otherwise (§4.1.1). No event follows.
    public func resetStream(streamID: UInt64) {
        precondition(outgoing == nil, "resetStream inside a field section")
        guard failure == nil else { return }
        forget(streamID)
    }

    /// Queues GOAWAY on our control stream (§5.2, §7.2.6). With
    /// `announceOnly`, its identifier is the largest a server may send
    /// (2^62-4): the client stops opening requests, those in flight are still
    /// served; call again without it later. Otherwise the identifier is the
    /// lowest request stream not yet seen: every request the client already
    /// opened is served, later ones are refused with H3_REQUEST_REJECTED,
    /// and `isFinished` turns true when the last open one ends. Identifiers
    /// only decrease ("MUST NOT be greater than the identifier in any
    /// previous frame"): a call that would not lower it sends nothing.
    public func goAway(announceOnly: Bool = false) {
        guard failure == nil else { return }
        let id = announceOnly ? Self.maxGoAwayID : nextRequestStreamID
        if let goAwayID, id >= goAwayID { return }
        goAwayID = id
        H3FrameEncoder.appendGoaway(streamID: id, to: &localOutput[.control])
    }

    /// §5.2: "2^62-4 for servers".
    public static let maxGoAwayID: UInt64 = (1 << 62) - 4

    func writable(_ id: UInt64) -> H3RequestRecord? {
        guard failure == nil, let r = requests[id], r.response != .ended else { return nil }
        return r
    }

    static func isConnectionSpecific(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 7: FieldSyntax.equals(name, "upgrade")
        case 10: FieldSyntax.equals(name, "connection") || FieldSyntax.equals(name, "keep-alive")
        case 16: FieldSyntax.equals(name, "proxy-connection")
        case 17: FieldSyntax.equals(name, "transfer-encoding")
        default: false
        }
    }

    /// Fields an intermediary must not put in a compression table.
    static func isSensitive(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 10: FieldSyntax.equals(name, "set-cookie")
        case 13: FieldSyntax.equals(name, "authorization")
        default: false
        }
    }
}
