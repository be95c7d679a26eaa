import CSys
import Core
import Gateway
import Proxy

/// The PROXY protocol header (--proxy-protocol; HAProxy's "The PROXY
/// protocol" v1 and v2): on a connection from a --proxy-allow-ips peer it
/// comes first, before a TLS ClientHello, an HTTP/2 preface or an HTTP/1.1
/// request, and says who the relayed client is.
///
///     accept ─(peer on the list)─▶ proxyHeader ──complete──▶ TLS handshake or HTTP (head)
///                                      └─missing, malformed, truncated, too long, timeout─▶ closed
///
/// The header is read from the socket with MSG_PEEK and only its own bytes
/// are consumed (`ProxyHeaderReader` says how many), so whatever follows it
/// (TLS records, which OpenSSL reads from the descriptor itself) stays in
/// the socket. The reads are bounded (spec §2.1: 107 bytes for v1; §2.2:
/// 16 + the length for v2, refused beyond `ProxyHeaderDecoder.maxV2Length`),
/// and the header must be complete within --request-timeout. A bad header closes the connection at once without a
/// response and without calling the application (spec §2.2: "receivers
/// must drop connections presenting unexpected values").
extension H1Connection {
    /// From `open`, for a peer that must send the header.
    func beginProxyHeader() {
        phase = .proxyHeader
        interest = .readableOrPeerClosed
        worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
    }

    func readProxyHeader() {
        if !input.hasStorage {
            input.attach(worker.takeBlock(), capacity: worker.blockSize)
            inputPooled = true
        }
        let reader = worker.proxyHeaderReader
        let room = min(input.writableCount, reader.peekLimit(taken: input.writerIndex))
        guard room > 0 else { refuseProxyHeader(.v2TooLong); return }
        let n = csys_peek(fd, input.writable.baseAddress, room)
        if n < 0 {
            let e = csys_errno()
            if csys_eagain(e) != 0 { return }
            close()
            return
        }
        let seen = UnsafeRawBufferPointer(start: input.storage, count: input.writerIndex + n)
        switch reader.next(seen, taken: input.writerIndex, peerClosed: n == 0) {
        case .consume(let count):
            _ = consumeHeaderBytes(count)
        case .complete(let header, let count):
            guard consumeHeaderBytes(count) else { return }
            adopt(header)
            input.readerIndex = input.writerIndex
            releaseInput()
            startConnection()
        case .failed(let error):
            refuseProxyHeader(error)
        }
    }

    /// Takes `count` peeked bytes out of the socket, after those already
    /// taken; false (and closed) if the socket does not give them.
    private func consumeHeaderBytes(_ count: Int) -> Bool {
        guard count > 0 else { return true }
        let n = csys_read(fd, input.writable.baseAddress, count)
        guard n == count else {
            close()
            return false
        }
        input.writerIndex += count
        return true
    }

    /// The relayed client becomes the connection's peer (a `LOCAL` command,
    /// `UNSPEC`, v1 `UNKNOWN` and `AF_UNIX` keep the socket's); the server
    /// side stays the socket's own. The SSL TLV is kept for the application.
    private func adopt(_ header: ProxyHeader) {
        let socket = peer!
        if let (address, port) = header.clientAddress {
            peer = PeerInfo(address: .ip(address), remoteAddress: address.description, remotePort: Int(port),
                            serverName: socket.serverName, serverPort: socket.serverPort, isUnix: false,
                            scheme: socket.scheme)
        }
        peer.proxySSL = header.ssl
        Log.debug("PROXY v\(header.version.rawValue) header from \(socket.remoteAddress): client \(peer.remoteAddress)")
    }

    private func refuseProxyHeader(_ error: ProxyHeaderError) {
        Log.debug("PROXY header from \(peer.remoteAddress) refused: \(error)")
        aborted = true
        close()
    }

    /// A peer not on --proxy-allow-ips sent what the HTTP/1.1 parser
    /// refused: if it is a PROXY header, the connection is closed without
    /// an answer, as from an allowed peer with a bad header (nobody may
    /// claim to relay a client unless listed).
    func refusesUnlistedProxyHeader() -> Bool {
        guard worker.proxyPeers != nil, ProxyHeaderDecoder.startsWithSignature(input.readable) else { return false }
        Log.debug("PROXY header from \(peer.remoteAddress), which is not in --proxy-allow-ips: refused")
        aborted = true
        close()
        return true
    }
}
