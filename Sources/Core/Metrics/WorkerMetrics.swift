import CSys

/// A worker thread's pen on its own block of the shared metrics region
/// (see MetricsLayout): a pointer, or nil when the process has no metrics
/// (no `--metrics-port`, or run without a supervisor), so every call costs
/// one branch then.
///
/// One writer per block: the worker thread holding this value. Each call is
/// a relaxed load and store of one word (csys_counter_add), no allocation,
/// no lock. The supervisor reads the words concurrently and may see a
/// request's counters half-updated; the next scrape sees the rest.
///
///     let metrics = WorkerMetrics(block: region?.block(index))
///     metrics.requestBegun(.http11)
///     metrics.requestEnded(.http11, status: 200, microseconds: 180)
public struct WorkerMetrics: @unchecked Sendable {
    @usableFromInline let block: UnsafeMutablePointer<Int64>?

    public init(block: UnsafeMutablePointer<Int64>?) { self.block = block }

    public static let off = WorkerMetrics(block: nil)

    public var enabled: Bool { block != nil }

    @inlinable func add(_ index: Int, _ amount: Int64 = 1) {
        guard let block else { return }
        csys_counter_add(block, Int32(truncatingIfNeeded: index), amount)
    }

    @inlinable public func requestBegun(_ p: MetricsProtocol) {
        add(MetricsLayout.requestsBegun + p.rawValue)
    }

    /// The request is over: `status` is the final status sent (0: none).
    @inlinable public func requestEnded(_ p: MetricsProtocol, status: Int, microseconds: Int64) {
        guard block != nil else { return }
        add(MetricsLayout.requests + p.rawValue * StatusClass.count + StatusClass(status: status).rawValue)
        let us = max(microseconds, 0)
        add(MetricsLayout.durationBuckets + p.rawValue * DurationBuckets.count + DurationBuckets.index(microseconds: us))
        add(MetricsLayout.durationMicroseconds + p.rawValue, us)
    }

    @inlinable public func connectionOpened(_ t: MetricsTransport) { add(MetricsLayout.connectionsOpened + t.rawValue) }
    @inlinable public func connectionClosed(_ t: MetricsTransport) { add(MetricsLayout.connectionsClosed + t.rawValue) }

    @inlinable public func received(_ t: MetricsTransport, bytes: Int) {
        add(MetricsLayout.bytesReceived + t.rawValue, Int64(bytes))
    }

    @inlinable public func sent(_ t: MetricsTransport, bytes: Int) {
        add(MetricsLayout.bytesSent + t.rawValue, Int64(bytes))
    }

    @inlinable public func tlsHandshake(_ t: MetricsTransport, _ outcome: TLSHandshakeOutcome) {
        add(MetricsLayout.tlsHandshakes + t.rawValue * TLSHandshakeOutcome.count + outcome.rawValue)
    }

    @inlinable public func http2StreamOpened() { add(MetricsLayout.http2Streams) }

    /// An RST_STREAM sent or received, with its RFC 9113 §7 error code.
    @inlinable public func http2Reset(code: UInt32) { add(MetricsLayout.http2Resets + H2ResetCode.index(code)) }

    @inlinable public func webSocketMessageReceived() { add(MetricsLayout.webSocketMessagesIn) }
    @inlinable public func webSocketMessageSent() { add(MetricsLayout.webSocketMessagesOut) }

    /// The server answered `status` itself (a parse error, a timeout, a
    /// limit, --limit-concurrency).
    @inlinable public func rejected(status: Int) { add(MetricsLayout.rejected + RejectReason(status: status).rawValue) }

    /// `count` QUIC path events of one kind (ECN congestion signals, validation failures).
    @inlinable public func quicPathEvents(_ event: QUICPathEvent, count: Int = 1) {
        add(MetricsLayout.quicPathEvents + event.rawValue, Int64(count))
    }

    @inlinable public func webTransportSession(_ result: WebTransportSessionResult) {
        add(MetricsLayout.webTransportSessions + result.rawValue)
    }

    @inlinable public func webTransportStreamOpened() { add(MetricsLayout.webTransportStreams) }
    @inlinable public func webTransportDatagramReceived() { add(MetricsLayout.webTransportDatagramsIn) }
    @inlinable public func webTransportDatagramSent() { add(MetricsLayout.webTransportDatagramsOut) }

    @inlinable public func webTransportDatagramsDropped(_ reason: WebTransportDatagramDrop, count: Int = 1) {
        add(MetricsLayout.webTransportDatagramsDropped + reason.rawValue, Int64(count))
    }

    /// Python's version, for `peregrine_build_info`.
    public func setPythonVersion(major: Int, minor: Int, micro: Int) {
        guard let block else { return }
        csys_counter_store(block, Int32(MetricsLayout.pythonVersion), Int64(major << 16 | minor << 8 | micro))
    }
}
