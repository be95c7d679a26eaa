// Input: stream bytes, and request streams (RFC 9114 §4.1, §6.1).
//
// A request stream is opened by `peerOpened` or by its first bytes. It is
// refused (H3_REQUEST_REJECTED) at or above our GOAWAY identifier (§5.2) and
// beyond `maxConcurrentStreams`. Its bytes go through `H3RequestStream`,
// which orders the frames and validates the messages; each HEADERS frame's
// field section goes through the connection's QPACK decoder, which may keep
// it until encoder-stream inserts arrive (RFC 9204 §2.1.2) — meanwhile the
// stream reads nothing. The end of the request is reported once: with the
// head (`endStream`), with the last DATA slice, as an empty `.data` with
// `endStream`, or as the trailers.
//
// RFC 9204 §2.2.2.2: "When an endpoint receives a stream reset before the end
// of a stream or before all encoded field sections are processed on that
// stream, or when it abandons reading of a stream, it generates a Stream
// Cancellation instruction" — every way a stream is given up before its FIN
// was read goes through `forget(_:)`, which does that.

import Core
import HTTPFields

extension H3Session {
    /// Feeds the next bytes of the client's stream `streamID`, in order,
    /// starting where the consumed bytes of earlier calls ended.
    /// - Parameters:
    ///   - fin: the stream ends after `bytes` (QUIC delivered its FIN).
    /// - Returns: the first event (nil: nothing more for now — keep the
    ///   unconsumed rest and offer it again with more, or after this
    ///   stream's `.request`/`.trailers` if it `isBlocked`), and how many
    ///   bytes of `bytes` were used. Call again until the event is nil.
    public func receive(streamID id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) -> (event: H3Event?, consumed: Int) {
        precondition(id & 0x1 == 0, "stream \(id) is server-initiated: the session only reads client streams")
        guard failure == nil else { return (nil, bytes.count) }
        if let event = nextUnblocked() { return (event, 0) }
        return id & 0x2 == 0 ? receiveRequest(id, bytes, fin: fin) : receiveUni(id, bytes, fin: fin)
    }

    /// The client opened stream `streamID` (QUIC opens lower-numbered
    /// streams of the same kind implicitly: report those too, so a GOAWAY
    /// and `isFinished` account for requests whose bytes are still on the
    /// way). - Returns: a `.streamError` if the request is refused.
    public func peerOpened(streamID id: UInt64) -> H3Event? {
        precondition(id & 0x1 == 0, "stream \(id) is server-initiated")
        guard failure == nil, id & 0x2 == 0, requests[id] == nil, !closedRequests.contains(id) else { return nil }
        return open(id)
    }

    /// The client reset its sending side of `streamID` (RESET_STREAM).
    public func peerReset(streamID id: UInt64, code: H3ErrorCode) -> H3Event? {
        guard failure == nil else { return nil }
        if id & 0x3 == 0x2 {
            // §6.2: a stream reset before its type is tolerated; after, only
            // the critical ones matter (§6.2.1, RFC 9204 §4.2).
            guard let s = peerUniStreams.removeValue(forKey: id) else { return nil }
            if case .preamble = s { return nil }
            do { try peerStreams.closed(id) } catch { return fail(error) }
            return nil
        }
        guard id & 0x3 == 0, requests[id] != nil else { return nil }
        forget(id)
        return .streamReset(streamID: id, code: code)
    }

    /// The client asked us to stop sending on `streamID` (STOP_SENDING).
    public func peerStopSending(streamID id: UInt64, code: H3ErrorCode) -> H3Event? {
        guard failure == nil else { return nil }
        if let local = H3LocalStream(streamID: id) {
            switch local {
            case .control: return fail(.stopSendingOnControlStream)
            case .qpackEncoder: return fail(.stopSendingOnEncoderStream)
            case .qpackDecoder: return fail(.stopSendingOnDecoderStream)
            }
        }
        guard id & 0x3 == 0, requests[id] != nil else { return nil }
        // The response is unwanted: the request is cancelled (§4.1.1).
        forget(id)
        return .streamReset(streamID: id, code: code)
    }

    // MARK: request streams

    /// A new request stream, or the refusal of one.
    func open(_ id: UInt64) -> H3Event? {
        if highestRequestStreamID.map({ id > $0 }) ?? true { highestRequestStreamID = id }
        let afterGoAway = goAwayID.map { id >= $0 } ?? false
        // With WebTransport on, a stream past our GOAWAY may still be a data
        // stream of a session that lives on (draft-ietf-webtrans-http3 §4.7:
        // after GOAWAY an endpoint "MAY open new WebTransport streams"): it
        // is refused only once its first bytes show it is a request.
        if afterGoAway && limits.webTransport == nil { return refuse(id, .requestAfterGoaway) }
        if requests.count >= limits.maxConcurrentStreams { return refuse(id, .tooManyRequestStreams) }
        let r = H3RequestRecord(id: id, allowConnectProtocol: limits.enableConnectProtocol, frameLimits: frameLimits)
        r.refuseUnlessWebTransport = afterGoAway
        // The table lives as long as the connection and grows now and then:
        // its storage goes where the connection's blocks are (AllocationZone).
        let zone = AllocationZone.connection.enter()
        requests[id] = r
        AllocationZone.restore(zone)
        return nil
    }

    private func refuse(_ id: UInt64, _ error: H3Error) -> H3Event {
        // Its HEADERS may reference the dynamic table: we will never read them.
        decoder.cancelStream(id)
        rememberClosed(id)
        return .streamError(streamID: id, code: error.code, reason: error.reason)
    }

    private func receiveRequest(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) -> (event: H3Event?, consumed: Int) {
        if requests[id] == nil {
            if closedRequests.contains(id) { return (nil, bytes.count) }
            if let refused = open(id) { return (refused, bytes.count) }
        }
        let r = requests[id]!
        if r.requestDone { return (nil, bytes.count) }
        if !r.signalChecked && limits.webTransport != nil {
            // draft-ietf-webtrans-http3 §4.3: the signal 0x41 "as the first
            // bytes" of a client bidirectional stream makes it a WebTransport
            // stream, not a request. The first varint may arrive split: its
            // bytes are kept here (consumed) until it is whole.
            guard !bytes.isEmpty || !r.signalPrefix.isEmpty else {
                if fin { r.signalChecked = true; return receiveRequest(id, bytes, fin: fin) }
                return (nil, 0)
            }
            let had = r.signalPrefix.count
            let need = QUICVarInt.length(firstByte: had > 0 ? r.signalPrefix[0] : bytes[0])
            let take = min(need - had, bytes.count)
            r.signalPrefix.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
            if r.signalPrefix.count < need && !fin { return (nil, bytes.count) }
            r.signalChecked = true
            let first = r.signalPrefix.withUnsafeBytes { QUICVarInt.decode($0, at: 0)?.value }
            if first == WebTransportStreamHeader.bidiSignal {
                // Nothing of it reached the QPACK decoder: nothing to cancel.
                remove(id)
                return (.webTransportStream(streamID: id, bidirectional: true), take)
            }
            // A request (or a stream that ends inside its first varint): the
            // kept bytes go to the frame machine first. They are part of a
            // frame type, so they make no event.
            if had > 0 && !r.refuseUnlessWebTransport {
                let prefix = Array(r.signalPrefix[0..<had])
                let failed: H3Error? = prefix.withUnsafeBytes { p in
                    do throws(H3Error) {
                        let (event, _) = try r.machine.read(p)
                        precondition(event == nil, "part of a frame type made an event")
                        return nil
                    } catch {
                        return error
                    }
                }
                if let failed { return (streamFailure(id, failed), bytes.count) }
            }
            r.signalPrefix = []
        }
        if r.refuseUnlessWebTransport {
            requests[id] = nil
            return (refuse(id, .requestAfterGoaway), bytes.count)
        }
        if r.isDecoding {
            if fin && bytes.isEmpty { r.finSeen = true }
            return (nil, 0)
        }
        var i = 0
        while true {
            let start = i
            let read: (event: H3RequestStream.Event?, consumed: Int)
            do { read = try r.machine.read(UnsafeRawBufferPointer(rebasing: bytes[start...])) } catch {
                return (streamFailure(id, error), bytes.count)
            }
            i += read.consumed
            let atEnd = fin && i == bytes.count
            switch read.event {
            case nil:
                // Everything was consumed.
                guard fin else { return (nil, i) }
                r.finSeen = true
                return (finishRequest(r), i)
            case .fieldSection(let trailers):
                if atEnd { r.finSeen = true }
                headerScratch.list.removeAll()
                let decoded: Result<Bool, H3Error> = r.machine.fieldSectionBytes.withUnsafeBytes { s in
                    do throws(H3Error) { return .success(try decoder.decodeFieldSection(s, stream: id, into: &headerScratch.list)) } catch {
                        return .failure(error)
                    }
                }
                let done: Bool
                switch decoded {
                case .success(let d): done = d
                case .failure(let error): return (sectionFailure(r, error, trailers: trailers), bytes.count)
                }
                guard done else {
                    r.awaitingInserts = true
                    return (nil, i)
                }
                return (acceptSection(r), i)
            case .body(let range):
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start + range.lowerBound ..< start + range.upperBound])
                // A body that ends short of its content-length: its last
                // bytes are delivered all the same and the FIN reports the
                // error on the next call, as when the FIN comes alone, so
                // that how the bytes were cut changes nothing (fuzz-h3-session).
                let short = r.machine.contentLength.map { $0 != r.machine.bodyReceived } ?? false
                guard atEnd && r.machine.isAtFrameBoundary && !short else {
                    return (.data(streamID: id, bytes: slice, endStream: false), i)
                }
                r.finSeen = true
                do { try r.machine.finish() } catch { return (streamFailure(id, error), bytes.count) }
                endRequest(r)
                return (.data(streamID: id, bytes: slice, endStream: true), i)
            }
        }
    }

    /// The FIN, with every byte before it consumed and no section pending.
    private func finishRequest(_ r: H3RequestRecord) -> H3Event? {
        do { try r.machine.finish() } catch { return streamFailure(r.id, error) }
        let reported = r.endReported
        endRequest(r)
        return reported ? nil : .data(streamID: r.id, bytes: UnsafeRawBufferPointer(start: nil, count: 0), endStream: true)
    }

    private func endRequest(_ r: H3RequestRecord) {
        r.requestDone = true
        r.endReported = true
        if r.isComplete { remove(r.id) }
    }

    /// The decoded section in `headerScratch.list` for the stream's pending HEADERS.
    func acceptSection(_ r: H3RequestRecord) -> H3Event? {
        if r.machine.state == .decodingHead {
            let head: RequestHead
            do { head = try r.machine.acceptHead(headerScratch.list) } catch { return streamFailure(r.id, error) }
            if r.finSeen {
                do { try r.machine.finish() } catch { return streamFailure(r.id, error) }
                endRequest(r)
            }
            return .request(streamID: r.id, head: head, endStream: r.finSeen)
        }
        let trailers: RequestHead
        do { trailers = try r.machine.acceptTrailers(headerScratch.list) } catch { return streamFailure(r.id, error) }
        // §4.1.2: the body is complete once the trailers are here.
        if let length = r.machine.contentLength, length != r.machine.bodyReceived {
            return streamFailure(r.id, .contentLengthMismatch)
        }
        r.endReported = true
        if r.finSeen {
            do { try r.machine.finish() } catch { return streamFailure(r.id, error) }
            endRequest(r)
        }
        return .trailers(streamID: r.id, head: trailers)
    }

    /// A field section that failed to decode.
    private func sectionFailure(_ r: H3RequestRecord, _ error: H3Error, trailers: Bool) -> H3Event {
        // §4.2.2: "A server that receives a larger header section than it is
        // willing to handle can send an HTTP 431 (Request Header Fields Too
        // Large) status code" — as over HTTP/2, the session answers itself.
        guard error == .fieldSectionTooLarge && !trailers else { return streamFailure(r.id, error) }
        forget(r.id)
        return .headTooLarge(streamID: r.id, response: UnsafeRawBufferPointer(headTooLargeResponse))
    }

    /// An error on request stream `id`: a connection error ends everything; a
    /// stream error forgets the stream.
    func streamFailure(_ id: UInt64, _ error: H3Error) -> H3Event {
        if error.isConnectionError { return fail(error) }
        forget(id)
        return .streamError(streamID: id, code: error.code, reason: error.reason)
    }

    /// Drops a request stream both ways; a Stream Cancellation if its reading
    /// was abandoned before the FIN or with a section still blocked (RFC 9204
    /// §2.2.2.2). A stream read to its FIN whose sections were all decoded
    /// (even if then found malformed) has nothing outstanding at the encoder.
    func forget(_ id: UInt64) {
        guard let r = requests[id] else { return }
        abandonReading(r)
        remove(id)
    }

    func abandonReading(_ r: H3RequestRecord) {
        if !r.requestDone && (!r.finSeen || r.awaitingInserts) { decoder.cancelStream(r.id) }
        r.requestDone = true
    }

    func remove(_ id: UInt64) {
        requests[id] = nil
        rememberClosed(id)
    }

    /// The list lives as long as the connection (AllocationZone, as `requests`).
    private func rememberClosed(_ id: UInt64) {
        let zone = AllocationZone.connection.enter()
        closedRequests.remember(id)
        AllocationZone.restore(zone)
    }

    /// Decodes the next stream the QPACK decoder released, if any.
    func nextUnblocked() -> H3Event? {
        while unblockedHead < unblocked.count {
            let id = unblocked[unblockedHead]
            unblockedHead += 1
            if unblockedHead == unblocked.count {
                unblocked.removeAll(keepingCapacity: true)
                unblockedHead = 0
            }
            // A stream given up meanwhile was cancelled at the decoder too.
            guard let r = requests[id], !r.requestDone, r.isDecoding else { continue }
            headerScratch.list.removeAll()
            r.awaitingInserts = false
            do { try decoder.decodeUnblocked(stream: id, into: &headerScratch.list) } catch {
                return sectionFailure(r, error, trailers: r.machine.state == .decodingTrailers)
            }
            if let event = acceptSection(r) { return event }
        }
        return nil
    }
}
