// Sending responses: field blocks, DATA, RST_STREAM, GOAWAY (RFC 9113 §6.1,
// §6.2, §6.4, §6.8, §8.1).
//
// Headers are built incrementally — beginHeaders, addField per field,
// endHeaders — so the server needs no array of its own: each field is
// lower-cased into a scratch buffer, connection-specific ones are dropped
// (§8.2.2 forbids them), and the rest is HPACK-encoded straight into a
// reused block buffer, then framed as HEADERS + CONTINUATION at the peer's
// SETTINGS_MAX_FRAME_SIZE.
//
// A stream that can no longer take what the server sends (reset by either
// side, or the connection failed) swallows it silently: the server learns of
// it through `.streamReset` (or `.connectionError`) and will stop. Fields for
// such a stream never reach the encoder, so HPACK stays in step with the
// peer. Misuse of the API (DATA before a response head, a second final head)
// is a server bug and traps.

import Core
import HTTPFields

extension H2Connection {
    // MARK: field blocks

    /// Starts a response head: `status` 1xx (informational; may repeat, not
    /// 101, which HTTP/2 forbids: §8.6) or a final status (once).
    public func beginHeaders(streamID: UInt32, status: Int) {
        precondition(outgoing == nil, "beginHeaders while another field block is open")
        precondition(status >= 100 && status <= 999 && status != 101, "invalid HTTP/2 status")
        let i = writableStream(streamID)
        if let i { precondition(streams[i].response == .awaitingHeaders, "second final response head") }
        outgoing = OutgoingBlock(streamID: streamID, informational: status < 200, trailers: false, discard: i == nil)
        guard i != nil else { return }
        sendBlock.removeAll(keepingCapacity: true)
        encodeStatus(status)
    }

    /// Starts trailers (sent with END_STREAM) after the response head.
    public func beginTrailers(streamID: UInt32) {
        precondition(outgoing == nil, "beginTrailers while another field block is open")
        let i = writableStream(streamID)
        if let i { precondition(streams[i].response == .headersSent, "trailers before the response head") }
        outgoing = OutgoingBlock(streamID: streamID, informational: false, trailers: true, discard: i == nil)
        sendBlock.removeAll(keepingCapacity: true)
    }

    /// Adds a field to the open block. The name is lower-cased here;
    /// connection, keep-alive, proxy-connection, transfer-encoding and
    /// upgrade are dropped. Spaces and tabs around the value are left out
    /// (FieldSyntax.trimmingWhitespace): §8.2.1 "A field value MUST NOT
    /// start or end with an ASCII whitespace character".
    public func addField(name: UnsafeRawBufferPointer, value untrimmed: UnsafeRawBufferPointer) {
        guard let block = outgoing else { preconditionFailure("addField outside beginHeaders/endHeaders") }
        guard !block.discard else { return }
        let value = FieldSyntax.trimmingWhitespace(untrimmed)
        nameScratch.removeAll(keepingCapacity: true)
        for c in name { nameScratch.append(FieldSyntax.lower(c)) }
        nameScratch.withUnsafeBytes { lower in
            if Self.isConnectionSpecific(lower) { return }
            encoder.encode(name: lower, value: value, indexing: indexing(name: lower, value: value), into: &sendBlock)
        }
    }

    /// Frames the block: END_STREAM when `endStream` (always for trailers,
    /// never for a 1xx head).
    public func endHeaders(endStream: Bool) {
        guard let block = outgoing else { preconditionFailure("endHeaders without beginHeaders") }
        outgoing = nil
        guard !block.discard, let i = writableStream(block.streamID) else { return }
        let ends = block.trailers || (endStream && !block.informational)
        writeFieldBlock(streamID: block.streamID, endStream: ends)
        if sendBlock.capacity > Self.scratchKeepCapacity { sendBlock = [] }
        if !block.informational { streams[i].response = .headersSent }
        if ends { sendEndStream(at: i) }
    }

    func encodeStatus(_ status: Int) {
        let digits = (UInt8(0x30 + status / 100), UInt8(0x30 + status / 10 % 10), UInt8(0x30 + status % 10))
        withUnsafeBytes(of: digits) { value in
            Self.statusName.withUTF8Buffer { name in
                encoder.encode(name: UnsafeRawBufferPointer(name), value: value, indexing: .incremental, into: &sendBlock)
            }
        }
    }

    static let statusName: StaticString = ":status"

    static func isConnectionSpecific(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 7: FieldSyntax.equals(name, "upgrade")
        case 10: FieldSyntax.equals(name, "connection") || FieldSyntax.equals(name, "keep-alive")
        case 16: FieldSyntax.equals(name, "proxy-connection")
        case 17: FieldSyntax.equals(name, "transfer-encoding")
        default: false
        }
    }

    /// set-cookie is never indexed (RFC 7541 §7.1.3: session secrets must
    /// not sit in a table an intermediary could probe); values that change
    /// per response, or would take more than half the table, are not indexed.
    private func indexing(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> HPACKEncoder.Indexing {
        switch name.count {
        case 10 where FieldSyntax.equals(name, "set-cookie"): return .neverIndexed
        case 4 where FieldSyntax.equals(name, "date"), 14 where FieldSyntax.equals(name, "content-length"):
            return .withoutIndexing
        default:
            return name.count + value.count + DynamicTable.entryOverhead > encoder.table.maxSize / 2
                ? .withoutIndexing : .incremental
        }
    }

    // MARK: DATA

    /// Frames as much of `bytes` as both send windows allow, split at the
    /// peer's max frame size. Returns how many bytes it took; END_STREAM goes
    /// out only if it took them all (an empty DATA with END_STREAM needs no
    /// window). A stream that can no longer send takes everything and
    /// discards it (the server is told by `.streamReset`).
    public func sendData(streamID: UInt32, _ bytes: UnsafeRawBufferPointer, endStream: Bool) -> Int {
        precondition(outgoing == nil, "sendData inside a field block")
        guard let i = writableStream(streamID) else { return bytes.count }
        precondition(streams[i].response == .headersSent, "DATA before the response head")
        let window = max(0, min(streams[i].sendWindow.value, connectionSend.value))
        let n = min(bytes.count, window)
        let ends = endStream && n == bytes.count
        guard n > 0 || ends else { return 0 }
        let frameSize = peerMaxFrameSize
        let frames = n == 0 ? 1 : (n + frameSize - 1) / frameSize
        reserveOutput(n + frames * FrameHeader.size)
        var at = 0
        repeat {
            let chunk = min(n - at, frameSize)
            let piece = UnsafeRawBufferPointer(rebasing: bytes[at ..< at + chunk])
            at += chunk
            let last = at == n
            writeFrame(size: FrameEncoder.dataSize(dataLength: chunk)) {
                FrameEncoder.encodeData(streamID: streamID, data: piece, endStream: ends && last, into: $0)
            }
        } while at < n
        streams[i].sendWindow.consume(n)
        connectionSend.consume(n)
        if ends { sendEndStream(at: i) }
        return n
    }

    /// min(stream, connection) send window now; 0 for a stream that cannot send.
    public func sendWindow(streamID: UInt32) -> Int {
        guard let i = streams.index(of: streamID), streams[i].state.mayWeSend, failure == nil else { return 0 }
        return max(0, min(streams[i].sendWindow.value, connectionSend.value))
    }

    /// Whether the stream still takes HEADERS/DATA from us (not reset, not ended).
    public func canSend(streamID: UInt32) -> Bool { writableStream(streamID) != nil }

    func writableStream(_ id: UInt32) -> Int? {
        guard failure == nil, let i = streams.find(id), streams[i].state.mayWeSend else { return nil }
        return i
    }

    func sendEndStream(at i: Int) {
        if let next = streams[i].state.sendEndStream() {
            streams[i].state = next
        } else {
            removeStream(at: i, .closed)
        }
    }

    // MARK: RST_STREAM, GOAWAY

    /// Resets a stream from our side (the application gave up, or the
    /// response is complete and the request body is not wanted: NO_ERROR,
    /// §8.1). Later frames on it are ignored. No event follows.
    public func resetStream(streamID: UInt32, code: HTTP2ErrorCode) {
        precondition(outgoing == nil, "resetStream inside a field block")
        guard failure == nil, let i = streams.find(streamID) else { return }
        removeStream(at: i, .resetByUs)
        writeRstStream(streamID, code)
    }

    /// Our GOAWAY with the last stream handed to the server (§6.8). Streams
    /// already open finish; new ones are ignored. With `.noError` this is a
    /// graceful shutdown: `isFinished` turns true once the last stream ends.
    /// Only the first call sends anything.
    public func goAway(code: HTTP2ErrorCode = .noError) {
        precondition(outgoing == nil, "goAway inside a field block")
        guard failure == nil, goAwayLastStreamID == nil else { return }
        let last = lastProcessedStreamID
        goAwayLastStreamID = last
        writeFrame(size: FrameEncoder.goAwaySize(debugDataLength: 0)) {
            FrameEncoder.encodeGoAway(lastStreamID: last, errorCode: code, debugData: UnsafeRawBufferPointer(start: nil, count: 0), into: $0)
        }
    }
}
