import Core
import Options
import PyBridge

/// Where the protocols tell the worker's metrics block (WorkerMetrics) that
/// a request began and ended, so each integration point is one call.
///
/// A request is metered from the moment it is handed to the application
/// (or a WebSocket conversation begins) until its exchange ends: the
/// response complete, the stream reset, the connection gone. `metered`
/// holds its protocol in between, so the end is counted once whichever of
/// those paths comes first, and "in flight" (begun minus ended) returns to
/// zero. Requests the server answers itself (health checks, refusals) are
/// not metered; refusals are counted by reason (`rejected(status:)`).
extension Worker {
    /// Worker thread `context`'s block of the supervisor's metrics region
    /// (`--worker-metrics`), or metrics off.
    static func metrics(_ config: Config, context: Int) -> WorkerMetrics {
        guard config.metricsFD >= 0,
              let region = MetricsRegion.map(fd: config.metricsFD, blocks: config.metricsBlocks) else { return .off }
        let metrics = WorkerMetrics(block: region.block(config.metricsFirstBlock + context))
        let v = Interpreter.version.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
        metrics.setPythonVersion(major: v.first ?? 0, minor: v.count > 1 ? v[1] : 0, micro: v.count > 2 ? v[2] : 0)
        return metrics
    }

    /// Microseconds since `start` by the worker's clock.
    func microseconds(since start: Instant) -> Int64 { (now.nanoseconds - start.nanoseconds) / 1000 }
}

extension H1Connection {
    func meterBegin(_ p: MetricsProtocol) {
        guard worker.metrics.enabled else { return }  // then meterEnd has nothing to do either
        perRequest.request.metered = p
        worker.metrics.requestBegun(p)
    }

    func meterEnd() {
        guard let p = perRequest.request.metered else { return }
        perRequest.request.metered = nil
        worker.metrics.requestEnded(p, status: perRequest.exchange.status, microseconds: worker.microseconds(since: perRequest.exchange.start))
    }
}

extension H2Session {
    func meterBegin(_ s: H2Stream, _ p: MetricsProtocol) {
        guard worker.metrics.enabled else { return }
        s.metered = p
        worker.metrics.requestBegun(p)
    }

    func meterEnd(_ s: H2Stream) {
        guard let p = s.metered else { return }
        s.metered = nil
        worker.metrics.requestEnded(p, status: s.exchange.status, microseconds: worker.microseconds(since: s.exchange.start))
    }
}

extension H3Connection {
    func meterBegin(_ s: H3Stream, _ p: MetricsProtocol = .h3) {
        guard worker.metrics.enabled else { return }
        s.metered = p
        worker.metrics.requestBegun(p)
    }

    func meterEnd(_ s: H3Stream) {
        guard let p = s.metered else { return }
        s.metered = nil
        worker.metrics.requestEnded(p, status: s.exchange.status, microseconds: worker.microseconds(since: s.exchange.start))
    }
}
