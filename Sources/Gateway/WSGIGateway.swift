import CPython
import CPyShim
import Core
import CSys
import PyBridge

/// The WSGI (PEP 3333) adapter: turns one `GatewayRequest` into a call of the
/// application and drives its response into an `Exchange`.
///
/// Theory of operation. One worker serves one WSGI request at a time, inline
/// on its thread: `serve` builds the environ, calls the application, then
/// walks the returned iterable. The response head is held back until the
/// first non-empty block (PEP 3333 "headers must not be sent until..."), so
/// `start_response` may still be called again with `exc_info`, or for the
/// first time from inside the first iteration. Each block then goes to the
/// socket before the next is asked for; a list or tuple is known in full and
/// goes out in one write with a computed Content-Length. A Content-Length the
/// application declares is enforced: excess is dropped, a short body aborts
/// the connection so the client cannot mistake it for complete.
///
/// The C-level objects handed to the application (wsgi.input,
/// start_response, write) carry this gateway and the request's `token`;
/// once `serve` returns the token changes and stale objects raise instead of
/// touching the next request. Everything here is the worker's own: a second
/// worker context in the process has its own gateway, caches and template,
/// and its objects never reach this one, except for the token check: an
/// application may keep such an object and call it from a request another
/// worker thread serves, which reads this gateway's token while this
/// worker's thread sets it: the token is a word read and written atomically
/// (`csys_board_*`, relaxed: it orders nothing else; a stale object raises
/// without touching anything, and handing a live one to another thread is
/// the application's to synchronise).
public final class WSGIGateway {
    private let app: PyRef
    private var environ: WSGIEnvironBuilder
    private let keys: WSGIKeys
    private let fileWrapperType: PyRef
    /// The request being served (0 between requests), one word read by the
    /// objects' stale check on whatever thread calls them.
    private let currentToken: UnsafeMutablePointer<Int64>
    var token: UInt64 { UInt64(bitPattern: csys_board_load(currentToken, 0)) }

    // Per-request state, reset by `serve`.
    private var exchange: Exchange?
    private var isHead = false
    private var startCalled = false
    private var headSent = false
    private var status = 0
    /// What start_response accepted: the status str and the checked
    /// headers tuple, held until the head is sent or the request ends.
    private var statusRef: PyOwned?
    private var headersRef: PyOwned?
    private var declaredLength: Int64?
    private var closeRequested = false
    private var writeUsed = false
    private var connectionLost = false
    private var bodyTooLarge = false
    /// The status owed to the client when reading the body failed (400 bad
    /// framing, 408 stall; 0 when the client is gone).
    private var bodyFailureStatus: Int?

    // Request-body look-ahead for readline.
    private let bodyBuffer: UnsafeMutableRawPointer
    private let bodyCapacity = 64 * 1024
    private var bodyStart = 0
    private var bodyEnd = 0
    private var bodyDone = false

    private var fields: UnsafeMutablePointer<ResponseField>
    private var fieldCapacity = 32
    /// The headers tuple `fields[0..<fieldsUsed]` was made from (views into
    /// its strs, alive while `checked` holds it); nil when `fields` holds
    /// something else.
    private var fieldsSource: PyRef?
    private var fieldsUsed = 0
    /// What the last accepted start_response found (see WSGICheckedResponse).
    private var checked = WSGICheckedResponse()

    /// wsgi.input, start_response and write, reused from request to request
    /// while the application keeps none of them.
    private var inputSlot = WSGIObjectSlot(WSGIInput.type, ownReferences: 2)
    private var startSlot = WSGIObjectSlot(WSGICallables.startResponseType)
    private var writeSlot = WSGIObjectSlot(WSGICallables.writeType)

    /// `multithread`: other worker contexts in this process call the same
    /// application from other threads (wsgi.multithread). `schemeForced`:
    /// `scheme` came from `--scheme` and holds whatever a proxy says.
    public init(app: PyRef, rootPath: String, scheme: StaticString, multiprocess: Bool, multithread: Bool = false,
                schemeForced: Bool = false) {
        self.app = app
        keys = WSGIKeys()
        // The process's native types exist before any worker thread does
        // (see ProcessObject).
        _ = WSGIInput.type
        _ = WSGICallables.startResponseType
        _ = WSGICallables.writeType
        let errorStreamType = Runtime.attribute("ErrorStream")
        let errorStream = pshim_call0(errorStreamType.ref)!
        // Kept (a strong reference) for the gateway's life: an application
        // rebinding _peregrine.FileWrapper does not free it under us.
        fileWrapperType = Runtime.attribute("FileWrapper").take()
        environ = WSGIEnvironBuilder(keys: keys, rootPath: rootPath, scheme: scheme, schemeForced: schemeForced,
                                     multiprocess: multiprocess, multithread: multithread, errors: errorStream,
                                     fileWrapper: fileWrapperType)
        bodyBuffer = .allocate(byteCount: bodyCapacity, alignment: 16)
        fields = .allocate(capacity: fieldCapacity)
        currentToken = .allocate(capacity: 1)
        currentToken.initialize(to: 0)
    }

    // MARK: - One request

    /// Serves one request to completion (or abort). `token` must differ from
    /// every earlier request's in the process.
    public func serve(_ request: GatewayRequest, exchange: Exchange, token: UInt64) {
        self.exchange = exchange
        isHead = request.isHead
        startCalled = false
        headSent = false
        status = 0
        declaredLength = nil
        closeRequested = false
        writeUsed = false
        connectionLost = false
        bodyTooLarge = false
        bodyFailureStatus = nil
        bodyStart = 0
        bodyEnd = 0
        bodyDone = false
        csys_board_store(currentToken, 0, Int64(bitPattern: token))
        defer { endRequest() }

        if let result = callApplication(request, token: token) {
            respond(with: result.ref)
            closeIterable(result.ref)
        } else {
            applicationFailed()
        }
    }

    /// `application(environ, start_response)`: the application keeps its own
    /// references to the environ, wsgi.input and start_response if it wants
    /// them (ours to the environ ends at `endRequest`, which may keep it for
    /// the next request if the application did not); nil with the exception set.
    private func callApplication(_ request: GatewayRequest, token: UInt64) -> PyOwned? {
        // Borrowed from the slots, which keep them past the call, and from
        // the builder, which keeps the environ until `endRequest`.
        guard let input = inputSlot.object(for: self, token: token),
              let start = startSlot.object(for: self, token: token),
              let env = environ.build(request, input: input) else { return nil }
        return PyOwned(stealing: pshim_call2(app, env, start))
    }

    /// The `write` callable start_response returns (a new reference), bound
    /// to the current request.
    func writeObject() -> PyRef? {
        guard let write = writeSlot.object(for: self, token: token) else { return nil }
        Py.incref(write)
        return write
    }

    /// After the application's iterable is released (`serve`'s scope for
    /// it has ended), so a generator that used the environ no longer holds it.
    private func endRequest() {
        environ.finish()
        csys_board_store(currentToken, 0, 0)
        statusRef = nil
        headersRef = nil
        exchange = nil
    }

    private func respond(with result: PyRef) {
        if pshim_list_check(result) != 0 || pshim_tuple_check(result) != 0 {
            respondWithSequence(result)
        } else if pshim_type(result) == UnsafeMutableRawPointer(fileWrapperType).assumingMemoryBound(to: PyTypeObject.self),
                  startCalled, respondWithFile(result) {
            return
        } else {
            respondWithIterable(result)
        }
    }

    /// A list or tuple: every block is in hand, so the length is known and
    /// the whole response goes out in one write.
    ///
    /// Each block is a strong reference while it is used: the list is the
    /// application's, and sending may wait for the socket with the GIL
    /// released, when another thread could change the list.
    private func respondWithSequence(_ result: PyRef) {
        let isList = pshim_list_check(result) != 0
        let count = isList ? pshim_list_size(result) : pshim_tuple_size(result)
        var total: Int64 = 0
        for i in 0..<count {
            guard let item = Py.sequenceItem(result, isList: isList, i) else { applicationFailed(); return }
            guard pshim_bytes_check(item.ref) != 0 else {
                Py.raise(Py.typeError, "the application's response must contain bytes, not \(Py.typeName(item.ref))")
                applicationFailed(); return
            }
            total += Int64(pshim_bytes_size(item.ref))
        }
        guard startCalled else {
            Py.raise(Py.runtimeError, "the application returned without calling start_response")
            applicationFailed(); return
        }
        if !headSent && !emitHead(knownLength: writeUsed ? nil : total) { return }
        for i in 0..<count {
            guard let item = Py.sequenceItem(result, isList: isList, i) else { applicationFailed(); return }
            guard pshim_bytes_check(item.ref) != 0 else {
                // The list changed since it was checked above.
                Py.raise(Py.typeError, "the application's response must contain bytes, not \(Py.typeName(item.ref))")
                applicationFailed(); return
            }
            if !sendBlock(item.ref, flush: false) { return }
        }
        finishResponse()
    }

    /// Any other iterable: each block reaches the socket before the next is
    /// requested (PEP 3333 "unbuffered").
    private func respondWithIterable(_ result: PyRef) {
        guard let iterator = PyOwned(stealing: PyObject_GetIter(result)) else { applicationFailed(); return }
        while let block = PyOwned(stealing: PyIter_Next(iterator.ref)) {
            let item = block.ref
            guard pshim_bytes_check(item) != 0 else {
                Py.raise(Py.typeError, "the application yielded \(Py.typeName(item)), not bytes")
                applicationFailed(); return
            }
            guard startCalled else {
                Py.raise(Py.runtimeError, "the application yielded body data before calling start_response")
                applicationFailed(); return
            }
            if pshim_bytes_size(item) == 0 { continue }
            if !headSent && !emitHead(knownLength: nil) { return }
            if isHead { break }   // the head is decided; a HEAD response has no body to produce
            if !sendBlock(item, flush: true) { return }
        }
        if PyErr_Occurred() != nil { applicationFailed(); return }
        guard startCalled else {
            Py.raise(Py.runtimeError, "the application returned without calling start_response")
            applicationFailed(); return
        }
        if !headSent && !emitHead(knownLength: writeUsed ? nil : 0) { return }
        finishResponse()
    }

    /// wsgi.file_wrapper around a regular file: sendfile from its current
    /// position. Returns false to fall back to plain iteration.
    private func respondWithFile(_ wrapper: PyRef) -> Bool {
        guard let owner = PyOwned(stealing: PyObject_GetAttrString(wrapper, "filelike")) else { PyErr_Clear(); return false }
        let filelike = owner.ref
        let fd = PyObject_AsFileDescriptor(filelike)
        if fd < 0 { PyErr_Clear(); return false }
        let size = Files.regularFileSize(fd)
        guard size >= 0 else { return false }
        // A Python file object may have read ahead into its own buffer; its
        // tell() is the logical position, which is where sending starts.
        var offset: Int64
        if let pos = PyOwned(stealing: pshim_call_method0(filelike, "tell")) {
            offset = Int64(PyLong_AsLongLong(pos.ref))
            if PyErr_Occurred() != nil { PyErr_Clear(); return false }
        } else {
            PyErr_Clear()
            return false
        }
        let remaining = max(0, size - offset)
        if !emitHead(knownLength: remaining) { return true }
        if isHead || remaining == 0 { finishResponse(); return true }
        guard let exchange else { return true }
        guard let sent = exchange.sendFile(fd: fd, offset: offset, count: remaining) else { return false }
        if sent < remaining {
            connectionLost = true
            exchange.abort()
            return true
        }
        finishResponse()
        return true
    }

    private func closeIterable(_ result: PyRef) {
        // Exact lists and tuples have no close(); asking would raise and
        // swallow an AttributeError on every request.
        if pshim_list_exact(result) != 0 || pshim_tuple_exact(result) != 0 { return }
        guard PyObject_HasAttrString(result, "close") != 0 else { return }
        if PyOwned(stealing: pshim_call_method0(result, "close")) == nil {
            let tb = takeTraceback()
            Log.error("the application's close() raised \(tb.exceptionName): \(tb.message)\n\(tb.text)")
        }
    }

    // MARK: - Output

    @discardableResult
    private func emitHead(knownLength: Int64?) -> Bool {
        guard let exchange, let headersRef = headersRef.ref, let statusRef = statusRef.ref else { return false }
        headSent = true
        // The same tuple as the last request's (an application answering
        // with the same headers list): `fields` already holds its views.
        if headersRef != fieldsSource { collectFields(headersRef) }
        let used = fieldsUsed
        let statusText = latin1View(statusRef)
        let reason = UnsafeRawBufferPointer(rebasing: statusText[min(4, statusText.count)...])
        let head = ResponseHead(status: status, reason: reason,
                                fields: UnsafeBufferPointer(start: fields, count: used),
                                contentLength: declaredLength ?? knownLength, close: closeRequested)
        if !exchange.sendHead(head) { connectionLost = true; return false }
        return true
    }

    /// Fills `fields` from a headers tuple start_response checked (and made,
    /// from a list): its pairs and their strs live as long as it does, so
    /// borrowing is safe; `checked` keeps the tuple for the next request.
    private func collectFields(_ headersRef: PyRef) {
        let n = pshim_tuple_size(headersRef)
        if n > fieldCapacity {
            fields.deallocate()
            fieldCapacity = Int(n) * 2
            fields = .allocate(capacity: fieldCapacity)
        }
        var used = 0
        for i in 0..<n {
            let pair = pshim_tuple_item(headersRef, i)!
            let name = latin1View(pshim_tuple_item(pair, 0)!)
            let value = latin1View(pshim_tuple_item(pair, 1)!)
            // Framing and connection management are the server's: the
            // application's Content-Length becomes the head's length, and
            // hop-by-hop fields (PEP 3333 forbids them) are not passed on.
            if ResponseFields.isServerOwned(name) { continue }
            fields[used] = ResponseField(name: name, value: value)
            used += 1
        }
        fieldsUsed = used
        fieldsSource = headersRef == checked.headers ? headersRef : nil
    }

    /// Sends one block (the exchange holds it to the Content-Length).
    private func sendBlock(_ bytes: PyRef, flush: Bool) -> Bool {
        guard let exchange else { return false }
        let count = pshim_bytes_size(bytes)
        if count == 0 { return true }
        let view = UnsafeRawBufferPointer(start: pshim_bytes_data(bytes), count: Int(count))
        if !exchange.sendBody(view, flush: flush) { connectionLost = true; return false }
        return true
    }

    private func finishResponse() {
        guard let exchange, !connectionLost else { return }
        // A body short of its Content-Length makes `finish` cut the
        // response off instead.
        if !exchange.finish() { connectionLost = true }
    }

    /// The application raised (the exception is pending). Before the head
    /// has gone out the client gets a 500 (413 when the body was too large);
    /// after, the connection is aborted.
    private func applicationFailed() {
        let tb = takeTraceback()
        guard let exchange else { return }
        if connectionLost { return }
        if headSent {
            Log.error("the application raised \(tb.exceptionName) after the response began; connection aborted\n\(tb.text)")
            exchange.abort()
            return
        }
        if bodyTooLarge {
            Log.info("request body exceeded --max-body; answered 413")
            sendErrorResponse(413)
        } else if let code = bodyFailureStatus, code != 0 {
            // The application failed because the body could not be read:
            // the client's fault, answered with the client's status.
            Log.info("request body could not be read; answered \(code)")
            sendErrorResponse(code)
        } else {
            Log.error("the application raised \(tb.exceptionName): \(tb.message)\n\(tb.text)")
            sendErrorResponse(500)
        }
    }

    private func sendErrorResponse(_ code: Int) {
        guard let exchange else { return }
        status = code
        headSent = true
        fieldsSource = nil  // fields[0] is overwritten below
        let reason = ReasonPhrase.reason(code)
        let body = reason
        let contentType: StaticString = "content-type"
        let plain: StaticString = "text/plain; charset=utf-8"
        fields[0] = ResponseField(name: UnsafeRawBufferPointer(start: contentType.utf8Start, count: contentType.utf8CodeUnitCount),
                                  value: UnsafeRawBufferPointer(start: plain.utf8Start, count: plain.utf8CodeUnitCount))
        let head = ResponseHead(status: code,
                                reason: UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount),
                                fields: UnsafeBufferPointer(start: fields, count: 1),
                                contentLength: Int64(body.utf8CodeUnitCount), close: code != 500)
        guard exchange.sendHead(head) else { return }
        _ = exchange.sendBody(UnsafeRawBufferPointer(start: body.utf8Start, count: body.utf8CodeUnitCount), flush: false)
        _ = exchange.finish()
    }

    // MARK: - start_response and write

    func startResponse(status statusObj: PyRef, headers: PyRef, excInfo: PyRef?) -> Bool {
        if let excInfo {
            if headSent {
                // PEP 3333: with the head already out, re-raise the error.
                // Borrowed from a tuple (immutable, held by our caller), then
                // given their own references for PyErr_Restore.
                if pshim_tuple_check(excInfo) != 0 && pshim_tuple_size(excInfo) == 3 {
                    let t = pshim_tuple_item(excInfo, 0)!, v = pshim_tuple_item(excInfo, 1)!, tb = pshim_tuple_item(excInfo, 2)!
                    PyErr_Restore(PyOwned(borrowing: t).take(), PyOwned(borrowing: v).take(),
                                  tb == Py.none ? nil : PyOwned(borrowing: tb).take())
                } else {
                    Py.raise(Py.typeError, "exc_info must be a (type, value, traceback) tuple")
                }
                return false
            }
        } else if startCalled {
            Py.raise(Py.assertionError, "start_response called a second time without exc_info")
            return false
        }
        guard let code = checkedStatus(statusObj) else { return false }
        guard pshim_list_check(headers) != 0 || pshim_tuple_check(headers) != 0 else {
            Py.raise(Py.typeError, "response_headers must be a list of (name, value) tuples, not \(Py.typeName(headers))")
            return false
        }
        if let known = checked.sameHeaders(headers) {
            // The pairs the last call checked, in the same order: the same
            // immutable tuples of immutable strs, so the same verdicts.
            statusRef = PyOwned(borrowing: statusObj)
            headersRef = PyOwned(borrowing: known)
            status = code
            declaredLength = checked.declared
            closeRequested = checked.close
            startCalled = true
            return true
        }
        var declared: Int64?
        var close = false
        let isList = pshim_list_check(headers) != 0
        let n = isList ? pshim_list_size(headers) : pshim_tuple_size(headers)
        for i in 0..<n {
            // A strong reference for the checks below (the list is the
            // application's); released at the end of each round.
            guard let owned = Py.sequenceItem(headers, isList: isList, i) else { return false }
            let pair = owned.ref
            guard pshim_tuple_check(pair) != 0, pshim_tuple_size(pair) == 2 else {
                Py.raise(Py.typeError, "each response header must be a (name, value) tuple, got \(Py.describe(pair))")
                return false
            }
            let nameObj = pshim_tuple_item(pair, 0)!, valueObj = pshim_tuple_item(pair, 1)!
            guard pshim_unicode_check(nameObj) != 0, pshim_unicode_check(valueObj) != 0 else {
                Py.raise(Py.typeError, "response header names and values must be str: \(Py.describe(pair))")
                return false
            }
            var data: UnsafePointer<UInt8>?
            var len: Py_ssize_t = 0
            guard pshim_unicode_latin1(nameObj, &data, &len) != 0, pshim_unicode_latin1(valueObj, &data, &len) != 0 else {
                Py.raise(Py.valueError, "response header \(Py.describe(pair)) is not latin-1")
                return false
            }
            let role: ResponseFieldRole
            do {
                role = try ResponseFields.role(name: latin1View(nameObj), value: latin1View(valueObj))
            } catch {
                raiseResponseFieldError(error, context: "start_response", name: nameObj, value: valueObj)
                return false
            }
            switch role {
            case .contentLength(let v):
                guard declared == nil || declared == v else {
                    raiseResponseFieldError(.invalidContentLength, context: "start_response", name: nameObj, value: valueObj)
                    return false
                }
                declared = v
            case .connection(let closes):
                close = close || closes
            case .regular, .framing:
                break  // kept; emitHead leaves out what the server frames itself
            }
        }
        // The checked headers are kept as a tuple: a list stays the
        // application's, which could change it (append a pair that is not a
        // tuple, or a value with CR LF) before the head is sent; the tuple
        // and the pairs and strs in it cannot change.
        let snapshot: PyOwned
        if isList {
            guard let tuple = PyOwned(stealing: PyList_AsTuple(headers)) else { return false }
            snapshot = tuple
        } else {
            snapshot = PyOwned(borrowing: headers)
        }
        // `fields` may hold views into the tuple remembered now, which goes.
        fieldsSource = nil
        checked.remember(headers: snapshot.ref, declared: declared, close: close)
        statusRef = PyOwned(borrowing: statusObj)
        headersRef = consume snapshot
        status = code
        declaredLength = declared
        closeRequested = close
        startCalled = true
        return true
    }

    /// The status code of a start_response status str, or nil with an
    /// exception set. The last str accepted is remembered (strs are
    /// immutable): an application passing the same object again, as one
    /// returning a constant does, is not parsed again.
    private func checkedStatus(_ statusObj: PyRef) -> Int? {
        if statusObj == checked.status { return checked.code }
        guard pshim_unicode_check(statusObj) != 0 else {
            Py.raise(Py.typeError, "status must be a str, not \(Py.typeName(statusObj))")
            return nil
        }
        let text = latin1View(statusObj)
        guard text.count >= 4, isDigit(text[0]), isDigit(text[1]), isDigit(text[2]), text[3] == 0x20,
              ResponseFields.isValidValue(UnsafeRawBufferPointer(rebasing: text[4...])) else {
            Py.raise(Py.valueError, "status must look like '200 OK', got \(Py.describe(statusObj))")
            return nil
        }
        let code = Int(text[0] - 0x30) * 100 + Int(text[1] - 0x30) * 10 + Int(text[2] - 0x30)
        guard code >= 200 else {
            Py.raise(Py.valueError, "status \(code): WSGI responses must be final (200-999)")
            return nil
        }
        checked.remember(status: statusObj, code: code)
        return code
    }

    func writeCallable(_ data: PyRef) -> Bool {
        guard pshim_bytes_check(data) != 0 else {
            Py.raise(Py.typeError, "write() takes bytes, not \(Py.typeName(data))")
            return false
        }
        guard startCalled else {
            Py.raise(Py.runtimeError, "write() called before start_response")
            return false
        }
        writeUsed = true
        if !headSent && !emitHead(knownLength: nil) {
            Py.raise(Py.osError, "client disconnected")
            return false
        }
        if isHead { return true }
        if !sendBlock(data, flush: true) {
            Py.raise(Py.osError, "client disconnected")
            return false
        }
        return true
    }

    // MARK: - Request body

    /// Fills the look-ahead buffer with more body; false at the end (or on
    /// failure, with a Python exception set).
    private func fillBody() -> Bool? {
        if bodyDone { return false }
        guard let exchange else { return false }
        if bodyStart > 0 {
            let n = bodyEnd - bodyStart
            if n > 0 { bodyBuffer.copyMemory(from: bodyBuffer + bodyStart, byteCount: n) }
            bodyStart = 0
            bodyEnd = n
        }
        switch exchange.readBody(into: UnsafeMutableRawBufferPointer(start: bodyBuffer + bodyEnd, count: bodyCapacity - bodyEnd)) {
        case .data(let n):
            bodyEnd += n
            return true
        case .end:
            bodyDone = true
            return false
        case .failed(let reason, let status):
            bodyFailureStatus = status
            if status == 0 { connectionLost = true }
            Py.raise(Py.osError, "request body could not be read: \(reason)")
            return nil
        case .tooLarge:
            bodyTooLarge = true
            Py.raise(Py.osError, "request body is larger than the server accepts (--max-body)")
            return nil
        }
    }

    /// read(size): blocks until `size` bytes or the end of the body.
    func readBody(size: Int) -> PyRef? {
        var capacity = size < 0 ? max(bodyCapacity, bodyEnd - bodyStart) : size
        if size > bodyCapacity * 16 { capacity = bodyCapacity }  // grow as data actually arrives
        // Manual: `_PyBytes_Resize` frees or moves the object as it grows,
        // so the reference is replaced again and again; an owner in a `var`
        // reassigned that way crashed the Swift 6.3 optimiser's ownership
        // verifier (and leaked in debug builds) in ASGIRequest, so this one
        // stays a plain pointer.
        guard var out = PyBytes_FromStringAndSize(nil, capacity) else { return nil }
        var filled = 0
        while size < 0 || filled < size {
            if bodyEnd == bodyStart {
                guard let more = fillBody() else { Py.decref(out); return nil }
                if !more { break }
            }
            let want = size < 0 ? bodyEnd - bodyStart : min(bodyEnd - bodyStart, size - filled)
            if filled + want > capacity {
                capacity = max(capacity * 2, filled + want)
                if size >= 0 { capacity = min(capacity, size) }
                var o: PyRef? = out
                guard _PyBytes_Resize(&o, capacity) == 0, let grown = o else { return nil }
                out = grown
            }
            (UnsafeMutableRawPointer(pshim_bytes_data(out)!) + filled).copyMemory(from: bodyBuffer + bodyStart, byteCount: want)
            filled += want
            bodyStart += want
        }
        if filled != capacity {
            var o: PyRef? = out
            guard _PyBytes_Resize(&o, filled) == 0, let shrunk = o else { return nil }
            out = shrunk
        }
        return out
    }

    /// readline(limit): up to and including the next b"\n".
    func readLine(limit: Int) -> PyRef? {
        var scanned = 0
        var pending: [UInt8] = []
        while true {
            let available = bodyEnd - bodyStart
            let p = (bodyBuffer + bodyStart).assumingMemoryBound(to: UInt8.self)
            while scanned < available {
                let b = p[scanned]
                scanned += 1
                if b == 0x0A || (limit >= 0 && pending.count + scanned >= limit) {
                    return takeLine(&pending, scanned)
                }
            }
            if available == bodyCapacity || (bodyStart > 0 && bodyEnd == bodyCapacity) {
                // The buffer is full without a newline: move it aside.
                pending.append(contentsOf: UnsafeRawBufferPointer(start: bodyBuffer + bodyStart, count: available))
                bodyStart = 0
                bodyEnd = 0
                scanned = 0
            }
            guard let more = fillBody() else { return nil }
            if !more { return takeLine(&pending, bodyEnd - bodyStart) }
        }
    }

    private func takeLine(_ pending: inout [UInt8], _ count: Int) -> PyRef? {
        let chunk = UnsafeRawBufferPointer(start: bodyBuffer + bodyStart, count: count)
        bodyStart += count
        if pending.isEmpty { return Py.bytes(chunk) }
        pending.append(contentsOf: chunk)
        return pending.withUnsafeBytes { Py.bytes($0) }
    }
}

// MARK: - Small helpers

@inline(__always) func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

/// The bytes of a 1-byte-kind str (validated in start_response).
func latin1View(_ s: PyRef) -> UnsafeRawBufferPointer {
    var data: UnsafePointer<UInt8>?
    var len: Py_ssize_t = 0
    guard pshim_unicode_latin1(s, &data, &len) != 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(start: data, count: len)
}
