import CSys
import Core
import Gateway
import HTTP1

/// Reading the socket and decoding request bodies.
extension H1Connection {
    enum FillResult { case data, again, eof, error }

    /// One non-blocking read into the input buffer (taking a pool block if
    /// the connection holds none).
    func fill() -> FillResult {
        if !input.hasStorage {
            input.attach(worker.takeBlock(), capacity: worker.blockSize)
            inputPooled = true
        }
        if input.writableCount == 0 { input.compact() }
        if input.writableCount == 0 { return .data }  // full: let the caller consume first
        switch io.read(into: input.writable) {
        case .data(let n):
            input.writerIndex += n
            return .data
        case .again: return .again
        case .eof: return .eof
        case .error: return .error
        }
    }

    func growInput() {
        let newCapacity = max(worker.config.maxHeaderSize + 4096, input.capacity * 2)
        guard newCapacity > input.capacity else { return }
        let block = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let old = input.move(toNewStorage: block, capacity: newCapacity) {
            if inputPooled { worker.giveBlock(old) } else { old.deallocate() }
        }
        inputPooled = false
    }

    /// Gives the parsing state back to the worker (idle or closed).
    func releaseParsing() {
        if let p = parsing {
            parsing = nil
            worker.giveParsing(p)
        }
    }

    func releaseInput() {
        guard input.hasStorage, input.isEmpty else { return }
        if let s = input.detach() {
            if inputPooled { worker.giveBlock(s) } else { s.deallocate() }
        }
    }

    /// Takes body bytes out of the input buffer without blocking: returns
    /// them and advances past them, or nil when more bytes are needed. Marks
    /// the body complete at its end. Throws the framing error of a bad
    /// chunked body.
    func nextBodySpan(max: Int) throws(H1Error) -> UnsafeRawBufferPointer? {
        let avail = input.readable
        switch perRequest.request.body.framing {
        case .none:
            perRequest.request.body.complete = true
            return nil
        case .contentLength:
            let n = Int(min(Int64(min(avail.count, max)), perRequest.request.body.remaining))
            guard n > 0 else { return nil }
            perRequest.request.body.remaining -= Int64(n)
            input.readerIndex += n
            if perRequest.request.body.remaining == 0 { perRequest.request.body.complete = true }
            return UnsafeRawBufferPointer(rebasing: avail[0..<n])
        case .chunked:
            if perRequest.request.body.chunkCarry > 0 {
                let n = min(perRequest.request.body.chunkCarry, avail.count, max)
                perRequest.request.body.chunkCarry -= n
                input.readerIndex += n
                return UnsafeRawBufferPointer(rebasing: avail[0..<n])
            }
            var offset = 0
            while true {
                let rest = UnsafeRawBufferPointer(rebasing: avail[offset...])
                switch parsing!.chunked.decode(rest) {
                case .data(let span, let consumed):
                    // `consumed` covers the framing and the payload; hand out
                    // what fits and keep the rest as carry.
                    let start = offset + span.start
                    let n = min(span.count, max)
                    input.readerIndex += offset + consumed - (span.count - n)
                    perRequest.request.body.chunkCarry = span.count - n
                    return UnsafeRawBufferPointer(rebasing: avail[start..<(start + n)])
                case .needMoreData(let consumed):
                    offset += consumed
                    if consumed == 0 {
                        input.readerIndex += offset
                        return nil
                    }
                case .end(let consumed):
                    input.readerIndex += offset + consumed
                    perRequest.request.body.complete = true
                    return nil
                case .failed(let error):
                    throw error
                }
            }
        }
    }

    /// Body bytes ready to hand out without reading the socket (an upper
    /// bound for chunked bodies, whose framing is still in the buffer).
    var bufferedBodyBytes: Int {
        switch perRequest.request.body.framing {
        case .none: return 0
        case .contentLength: return Int(min(Int64(input.readableCount), perRequest.request.body.remaining))
        case .chunked: return input.readableCount
        }
    }

    /// Copies the next body bytes into `buffer`; nil when none are buffered.
    /// Enforces --max-body; a framing error or the limit ends the body (and
    /// with it the connection, see `requestKeepAlive`).
    func copyBody(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, BodyError>? {
        do {
            guard let span = try nextBodySpan(max: buffer.count) else { return nil }
            if perRequest.exchange.receiveBody(count: span.count) == .tooLarge {
                perRequest.request.body.complete = true
                return .failure(BodyError(status: 413, reason: "perRequest.request body larger than --max-body"))
            }
            buffer.baseAddress!.copyMemory(from: span.baseAddress!, byteCount: span.count)
            return .success(span.count)
        } catch {
            perRequest.request.body.complete = true  // nothing more can be read from this framing
            return .failure(BodyError(status: Int(error.status), reason: error.reason))
        }
    }

    /// Runs a copy of the chunked decoder over the buffered body bytes and
    /// returns the framing error, if they contain one.
    func prevalidateChunkedBody() -> H1Error? {
        var probe = parsing!.chunked
        var rest = input.readable
        while !rest.isEmpty {
            switch probe.decode(rest) {
            case .data(_, let consumed), .needMoreData(let consumed):
                if consumed == 0 { return nil }
                rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            case .end:
                return nil
            case .failed(let error):
                return error
            }
        }
        return nil
    }

    /// Drops body bytes the application did not read; false when waiting
    /// for more input (or the connection was closed).
    func discardBody() -> Bool {
        while !perRequest.request.body.complete {
            let span: UnsafeRawBufferPointer?
            do { span = try nextBodySpan(max: Int.max) } catch { close(); return false }
            if let span {
                perRequest.request.body.discardBudget -= Int64(span.count)
                if perRequest.request.body.discardBudget < 0 { close(); return false }
                continue
            }
            if perRequest.request.body.complete { break }
            if input.isEmpty { releaseInput() }
            return false
        }
        phase = .head
        return true
    }
}

struct BodyError: Error {
    let status: Int
    let reason: StaticString
}
