// The CONNECT stream of a session: capsules in, the session's end
// (draft-ietf-webtrans-http3 §6 and §5.6; draft-02 §5; RFC 9297 §3).
//
// Before `accept`, bytes are kept (bounded) and read once the session is
// accepted (§3.2: "A server MUST NOT process these bytes as capsules until it
// sends a 2xx response"); they are dropped if it is refused. After it:
//   * WT_CLOSE_SESSION ends the session with its code and message; any byte
//     after it is H3_MESSAGE_ERROR (§6: "If any additional stream data is
//     received on the CONNECT stream after receiving a WT_CLOSE_SESSION
//     capsule, the stream MUST be reset with code H3_MESSAGE_ERROR");
//   * FIN without it is the same as code 0 and no message (§6), once the
//     stream ended on a capsule boundary (RFC 9297 §3.3: otherwise malformed);
//   * WT_DRAIN_SESSION asks the application to finish up (§4.7);
//   * DATAGRAM capsules are datagrams (RFC 9297 §3.5);
//   * flow-control capsules update the session's limits (§5.6), ignored
//     without flow control (§5.1); the prohibited WT_MAX_STREAM_DATA and
//     WT_STREAM_DATA_BLOCKED are unknown types here and skipped.

import Core

extension WebTransportRegistry {
    /// Body bytes of session `id`'s CONNECT stream (the payload of its DATA
    /// frames, as `H3Event.data` gives them), `fin` with the last.
    public func connectStreamData(sessionID id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) {
        guard !failed else { return }
        guard let s = sessions[id] else {
            if !bytes.isEmpty && closeReceived.contains(id) {
                // Once: the stream is reset for it, and bytes already on
                // their way after that must not fail it again.
                closeReceived.forget(id)
                emit(.sessionFailed(sessionID: id, code: .messageError))
            }
            return
        }
        guard s.state == .accepted else {
            guard s.early.count + bytes.count <= limits.maxEarlyConnectBytes else {
                emit(.sessionFailed(sessionID: id, code: .excessiveLoad))
                forgetSession(id, refused: true)
                return
            }
            s.early.append(contentsOf: bytes)
            if fin { s.earlyFin = true }
            return
        }
        readCapsules(s, bytes, fin: fin)
    }

    /// The client reset session `id`'s CONNECT stream, or asked us to stop
    /// sending on it (either ends the session, §6), or the HTTP/3 session
    /// failed the stream.
    public func connectStreamReset(sessionID id: UInt64) {
        guard !failed, let s = sessions[id] else { return }
        let known = s.state == .accepted || s.state == .requested
        terminate(s)
        if known { emit(.sessionClosed(sessionID: id, code: 0, message: [])) }
    }

    func readCapsules(_ s: WebTransportSessionRecord, _ bytes: UnsafeRawBufferPointer, fin: Bool) {
        var decoded: [WebTransportCapsule] = []
        var bad: CapsuleError?
        var afterClose = false
        var closed = false
        do {
            // Reading stops right after WT_CLOSE_SESSION: any byte left after
            // it, whatever it would parse as (capsules of types we skip
            // included), is H3_MESSAGE_ERROR (§6), in this read or a later one.
            let read = try s.capsules.readWhile(bytes, onCapsule: { type, value in
                guard bad == nil else { return false }
                do throws(CapsuleError) {
                    if let c = try WebTransportCapsule.decode(type: type, value: value) {
                        decoded.append(c)
                        if case .closeSession = c {
                            closed = true
                            return false
                        }
                    }
                } catch {
                    bad = error
                    return false
                }
                return true
            })
            if closed && read < bytes.count { afterClose = true }
        } catch {
            // The first error is the one reported: a capsule that failed to
            // decode ends the session there, whatever the bytes after it
            // (a later header too large for the reader must not change the
            // code depending on whether it came in the same read).
            if bad == nil { bad = error }
        }
        for c in decoded {
            guard sessions[s.id] === s else { return }
            apply(c, to: s)
        }
        if closed {
            if afterClose || bad != nil {
                closeReceived.forget(s.id)  // failed once (see connectStreamData)
                emit(.sessionFailed(sessionID: s.id, code: .messageError))
            }
            return
        }
        guard sessions[s.id] === s else { return }
        if let bad {
            fail(s, code: bad.code)
            return
        }
        guard fin else { return }
        do { try s.capsules.finish() } catch {
            fail(s, code: error.code)
            return
        }
        terminate(s)
        emit(.sessionClosed(sessionID: s.id, code: 0, message: []))
    }

    private func apply(_ c: WebTransportCapsule, to s: WebTransportSessionRecord) {
        switch c {
        case .closeSession(let code, let message):
            closeReceived.remember(s.id)
            terminate(s)
            emit(.sessionClosed(sessionID: s.id, code: code, message: message))
        case .drainSession:
            emit(.sessionDraining(sessionID: s.id))
        case .datagram(let payload):
            emit(.datagram(sessionID: s.id, payload: payload))
        case .maxData(let n):
            guard s.flow != nil else { return }
            do { try s.flow!.receiveMaxData(n) } catch { fail(s, code: WebTransportErrorCode.flowControlError) }
        case .maxStreams(let bidi, let n):
            guard s.flow != nil else { return }
            do { try s.flow!.receiveMaxStreams(bidirectional: bidi, n) } catch {
                fail(s, code: WebTransportErrorCode.flowControlError)
            }
        case .dataBlocked, .streamsBlocked:
            // Informational (§5.6.3, §5.6.5): our credit goes out as the
            // application consumes, never waiting for these.
            break
        }
    }

    /// The session breaks: its CONNECT stream is reset with `code`.
    func fail(_ s: WebTransportSessionRecord, code: H3ErrorCode) {
        guard sessions[s.id] === s else { return }
        terminate(s)
        emit(.sessionFailed(sessionID: s.id, code: code))
    }
}
