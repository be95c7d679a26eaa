import Core

/// A response complete before the client's END_STREAM, when every byte of
/// the declared content-length has already arrived (issue 22 point 4).
///
/// RFC 9113 §8.1 lets a server that sent a complete response "request that
/// the client abort transmission of a request without error by sending a
/// RST_STREAM with an error code of NO_ERROR". That is for stopping an upload
/// nobody will read. With the declared body whole there is nothing left to
/// stop but the END_STREAM flag, and clients that send it in an empty DATA
/// frame of their own after the body (httpx, through httpcore and h2) take
/// the reset as an error and throw the complete response away. So such a
/// stream is left half-closed on our side until the peer ends it; only a
/// peer that has not done so within `peerEndLingerMilliseconds` gets the
/// RST_STREAM(NO_ERROR), which frees the stream's slot.
///
/// The exchange itself is over when the response is (access log, the
/// application's end of request): only the stream id and a deadline wait,
/// in deadline order since every wait is as long as every other.
extension H2Session {
    /// How long a stream whose declared body has fully arrived waits for the
    /// peer's END_STREAM after our complete response (capped by
    /// --request-timeout). A client's END_STREAM normally follows its last
    /// DATA at once; this only bounds a client that never sends it.
    static let peerEndLingerMilliseconds = 2000

    /// Waits for the peer to end stream `id` instead of resetting it.
    func awaitPeerEnd(_ id: UInt32) {
        let limit = min(worker.config.requestTimeoutMilliseconds, H2Session.peerEndLingerMilliseconds)
        peerEndWaits.append(PeerEndWait(id: id, deadline: worker.now.adding(milliseconds: limit)))
    }

    /// The peer ended (or reset) stream `id`, which may be waited for.
    func peerEnded(_ id: UInt32) {
        guard !peerEndWaits.isEmpty, let i = peerEndWaits.firstIndex(where: { $0.id == id }) else { return }
        peerEndWaits.remove(at: i)
    }

    /// The earliest wait's deadline, for the connection's timer.
    var nextPeerEndDeadline: Instant? { peerEndWaits.first?.deadline }

    /// Resets (NO_ERROR) the streams whose peer did not end them in time.
    func expirePeerEndWaits() {
        let now = worker.now.adding(milliseconds: 1)
        while let first = peerEndWaits.first, first.deadline <= now {
            peerEndWaits.removeFirst()
            // A no-op for a stream the core already closed.
            core.resetStream(streamID: first.id, code: .noError)
            worker.metrics.http2Reset(code: 0)  // NO_ERROR
        }
    }
}

/// A stream whose complete response went out before the peer's END_STREAM.
struct PeerEndWait {
    let id: UInt32
    let deadline: Instant
}
