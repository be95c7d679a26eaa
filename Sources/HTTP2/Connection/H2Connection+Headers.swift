// Receiving field blocks: HEADERS and CONTINUATION (RFC 9113 §6.2, §6.10),
// the stream they open or end (§5.1, §5.1.1, §5.1.2), and their messages
// (§8.1).
//
// Every complete block goes through the HPACK decoder, even one we are about
// to ignore or refuse: the decoder's dynamic table must stay in step with the
// peer's encoder (§4.3), or every later block is garbage. The exceptions are
// blocks that end the connection anyway.
//
// A block split over CONTINUATION is buffered up to `maxHeaderBlockBytes`
// and `maxContinuationFrames` (the CONTINUATION flood); past either the
// connection ends with ENHANCE_YOUR_CALM before the buffer grows further.

import Core

extension H2Connection {
    func receiveHeaders(_ f: HeadersFrame, in view: UnsafeRawBufferPointer) -> H2Event? {
        let fragment = UnsafeRawBufferPointer(rebasing: view[f.fieldBlockFragment.start ..< f.fieldBlockFragment.end])
        let selfDependent = f.priority?.dependency == f.streamID
        if f.endHeaders {
            return receiveFieldBlock(fragment, streamID: f.streamID, endStream: f.endStream, selfDependent: selfDependent)
        }
        if fragment.isEmpty, let flood = spendEmptyFrame() { return flood }
        guard fragment.count <= limits.maxHeaderBlockBytes else { return fail(.headerBlockTooLarge) }
        pendingBlock = PendingBlock(streamID: f.streamID, endStream: f.endStream, selfDependent: selfDependent)
        blockBuffer.removeAll(keepingCapacity: true)
        blockBuffer.append(contentsOf: fragment)
        readMode = .continuation
        return nil
    }

    func receiveContinuation(_ f: ContinuationFrame, in view: UnsafeRawBufferPointer) -> H2Event? {
        // `receive` let only the expected CONTINUATION through in this mode.
        guard readMode == .continuation else { return fail(.unexpectedContinuation) }
        pendingBlock.continuations += 1
        guard pendingBlock.continuations <= limits.maxContinuationFrames else { return fail(.continuationFlood) }
        let fragment = UnsafeRawBufferPointer(rebasing: view[f.fieldBlockFragment.start ..< f.fieldBlockFragment.end])
        if fragment.isEmpty && !f.endHeaders, let flood = spendEmptyFrame() { return flood }
        guard blockBuffer.count + fragment.count <= limits.maxHeaderBlockBytes else { return fail(.headerBlockTooLarge) }
        blockBuffer.append(contentsOf: fragment)
        guard f.endHeaders else { return nil }
        readMode = .frames
        // An idle connection should not keep a large block's buffer.
        defer { if blockBuffer.capacity > Self.scratchKeepCapacity { blockBuffer = [] } else { blockBuffer.removeAll(keepingCapacity: true) } }
        return blockBuffer.withUnsafeBytes {
            receiveFieldBlock($0, streamID: pendingBlock.streamID, endStream: pendingBlock.endStream,
                              selfDependent: pendingBlock.selfDependent)
        }
    }

    enum Decoded {
        case fields
        /// Valid HPACK, over SETTINGS_MAX_HEADER_LIST_SIZE (nothing kept).
        case tooLarge
        /// A connection error (already failed).
        case failed(H2Event)
    }

    func decode(_ block: UnsafeRawBufferPointer) -> Decoded {
        headerList.removeAll()
        do {
            try decoder.decode(block, into: &headerList)
            return .fields
        } catch where error.scope == .headerListTooLarge {
            return .tooLarge
        } catch {
            // §4.3: "A decoding error in a field block MUST be treated as a
            // connection error of type COMPRESSION_ERROR" (a bomb: ENHANCE_YOUR_CALM).
            return .failed(fail(H2Error(error)))
        }
    }

    /// A complete field block on `streamID`.
    func receiveFieldBlock(_ block: UnsafeRawBufferPointer, streamID id: UInt32, endStream: Bool,
                           selfDependent: Bool) -> H2Event? {
        guard id & 1 == 1 else { return fail(.evenStreamID) }
        switch lookup(id) {
        case .live(let i):
            return receiveTrailers(block, at: i, endStream: endStream, selfDependent: selfDependent)
        case .idle:
            return receiveRequest(block, streamID: id, endStream: endStream, selfDependent: selfDependent)
        case .closed(.resetByUs):
            if case .failed(let e) = decode(block) { return e }
            return nil
        case .closed(.closed):
            return fail(.streamClosed)
        case .closed(nil):
            return fail(.streamIDNotIncreasing)
        }
    }

    private func receiveRequest(_ block: UnsafeRawBufferPointer, streamID id: UInt32, endStream: Bool,
                                selfDependent: Bool) -> H2Event? {
        highestStreamID = id
        let decoded = decode(block)
        if case .failed(let e) = decoded { return e }
        if let last = goAwayLastStreamID, id > last {
            // §6.8: after our GOAWAY, new streams are ignored; their late
            // frames too.
            closedStreams.remember(id, .resetByUs)
            return nil
        }
        if case .tooLarge = decoded { return respondHeaderListTooLarge(id, endStream: endStream) }
        if selfDependent { return refuse(id, .selfDependency) }
        // §5.1.2: "An endpoint that receives a HEADERS frame that causes its
        // advertised concurrent stream limit to be exceeded MUST treat this as
        // a stream error of type PROTOCOL_ERROR or REFUSED_STREAM."
        if streams.count >= limits.maxConcurrentStreams { return refuse(id, .refused) }
        let head: H2RequestHead
        do {
            head = try buildHead(trailers: false)
        } catch {
            return refuse(id, error)
        }
        if endStream, let length = head.contentLength, length != 0 { return refuse(id, .contentLengthWithEndStream) }
        streams.insert(H2Stream(id: id, state: .opened(endStream: endStream), sendWindow: SendWindow(peerInitialWindow),
                                receiveWindow: ReceiveWindow(streamReceiveWindow), expectedLength: head.contentLength))
        lastProcessedStreamID = id
        return .request(streamID: id, head: head, endStream: endStream)
    }

    private func receiveTrailers(_ block: UnsafeRawBufferPointer, at i: Int, endStream: Bool,
                                 selfDependent: Bool) -> H2Event? {
        let decoded = decode(block)
        if case .failed(let e) = decoded { return e }
        guard streams[i].state.peerMaySend else { return streamError(at: i, .streamHalfClosed) }
        if case .tooLarge = decoded { return streamError(at: i, H2Error(HPACKError.headerListTooLarge)) }
        guard endStream else { return streamError(at: i, .trailersWithoutEndStream) }
        if selfDependent { return streamError(at: i, .selfDependency) }
        let head: H2RequestHead
        do {
            head = try buildHead(trailers: true)
        } catch {
            return streamError(at: i, error)
        }
        if let expected = streams[i].expectedLength, expected != streams[i].receivedLength {
            return streamError(at: i, .contentLengthMismatch)
        }
        let id = streams[i].id
        if let next = streams[i].state.receiveEndStream() {
            streams[i].state = next
        } else {
            removeStream(at: i, .closed)
        }
        return .trailers(streamID: id, head: head)
    }

    /// Validates the decoded list into `lentHead` and lends it: the event
    /// shares its arrays, which the next head reuses if the server let go
    /// of them (else copy-on-write gives the next head new ones).
    private func buildHead(trailers: Bool) throws(H2Error) -> H2RequestHead {
        // A large head once should not stay with the connection.
        if lentHead.storage.capacity > Self.scratchKeepCapacity { lentHead = H2RequestHead() }
        try validator.build(headerList, trailers: trailers, into: &lentHead)
        return lentHead
    }

    /// A request head over SETTINGS_MAX_HEADER_LIST_SIZE: answered 431 here
    /// (RFC 6585 §5; RFC 9113 §10.5.1), then RST_STREAM(NO_ERROR) if the
    /// client is still sending (§8.1: "A server can send a complete response
    /// prior to the client sending an entire request").
    private func respondHeaderListTooLarge(_ id: UInt32, endStream: Bool) -> H2Event? {
        sendBlock.removeAll(keepingCapacity: true)
        encodeStatus(431)
        writeFieldBlock(streamID: id, endStream: true)
        if let flood = countControlFrame() { return flood }
        if endStream {
            closedStreams.remember(id, .closed)
            return resetBudget.take(now: now) ? nil : fail(.rapidReset)
        }
        return refuse(id, H2Error(code: .noError, reason: "response sent before the request ended"))
    }
}
