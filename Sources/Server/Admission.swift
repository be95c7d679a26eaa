import CSys
import Core
import Exchanges
import Options

/// What a worker decides about a request before any application sees it,
/// and about a connection's age: --health-path, --limit-concurrency and
/// --max-connection-age. Shared by every transport (HTTP/1.1 connections
/// and HTTP/2 streams ask the same questions at the same point: the request
/// head is complete and the exchange set up).
///
/// - **Health** (`--health-path`): a request for exactly that path (the raw
///   path, query aside; any method) is answered by the worker: `200 OK`
///   while serving, `503 Service Unavailable` once draining (see
///   `Worker.draining`). It is not counted in flight, never refused for the
///   limit, not counted for --max-requests and not in the access log.
/// - **Concurrency** (`--limit-concurrency N`): requests handed to the
///   application and not yet ended, per worker. Beyond N a new request is
///   answered at once `503 Service Unavailable` with `Retry-After: 1`
///   (HTTP/2: on its stream; the connection lives on), so nothing queues
///   without bound: the cost of a refused request is its head. WebSocket
///   sessions are not counted (they are long-lived by design; bound them
///   with --max-connections).
/// - **Age** (`--max-connection-age MS`): each connection gets a deadline,
///   `MS` plus a random 0–10% (so a fleet's connections do not all end at
///   once); past it the next response closes the connection
///   (`Connection: close`) and HTTP/2 gets a GOAWAY, so clients reconnect
///   and a load balancer can spread them over new instances.
struct Admission {
    enum Verdict {
        /// Hand it to the application (counted in flight: call `ended`).
        case application
        /// Answer the health check.
        case health
        /// Over --limit-concurrency: answer 503 with `Retry-After`.
        case overLimit
    }

    private let healthPath: [UInt8]?
    /// 0: no limit.
    let limit: Int
    private(set) var inFlight = 0
    private let maxAgeMilliseconds: Int

    /// `Retry-After: 1` (RFC 9110 §10.2.3: seconds) on a 503 for the limit.
    static var retryAfter: ResponseField { ResponseField(name: bytes("retry-after"), value: bytes("1")) }

    init(config: Config) {
        healthPath = config.healthPath.map { Array($0.utf8) }
        limit = config.limitConcurrency
        maxAgeMilliseconds = config.maxConnectionAgeMilliseconds
    }

    /// The verdict on a request for `path` (raw, without the query);
    /// `counted`: it would occupy a slot (not a WebSocket).
    mutating func admit(path: UnsafeRawBufferPointer, counted: Bool = true) -> Verdict {
        if let healthPath, path.count == healthPath.count, path.elementsEqual(healthPath) { return .health }
        guard counted else { return .application }
        if limit > 0 && inFlight >= limit { return .overLimit }
        inFlight += 1
        return .application
    }

    /// A request admitted as `.application` ended (answered, reset, or its
    /// connection gone).
    mutating func ended() {
        inFlight -= 1
    }

    /// The age deadline of a connection opened at `now` (nil: no limit).
    func connectionDeadline(now: Instant) -> Instant? {
        guard maxAgeMilliseconds > 0 else { return nil }
        let jitter = maxAgeMilliseconds >= 10 ? Int(csys_random() % UInt32(maxAgeMilliseconds / 10 + 1)) : 0
        return now.adding(milliseconds: maxAgeMilliseconds + jitter)
    }

    private static func bytes(_ s: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }
}
