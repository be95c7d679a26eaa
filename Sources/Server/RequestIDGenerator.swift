import CSys
import Core
import Gateway
import Options

/// Makes the ids of requests that came without a usable one
/// (`--request-id-header`): 32 hex digits, unique without a syscall per
/// request. The first 16 are this worker's random seed (getrandom at start,
/// 64 bits: collisions between workers, restarts and hosts are as unlikely
/// as between random UUIDs), the last 16 a counter passed through the
/// SplitMix64 finaliser (a bijection of 64-bit values, so ids of one worker
/// never repeat while they do not look sequential).
final class RequestIDGenerator {
    let name: [UInt8]
    let lowerName: [UInt8]
    private let seed: UInt64
    private var counter: UInt64
    /// HTTP/1.1 response fields plus the echoed id (see `withEcho`).
    var echoFields = UnsafeMutableBufferPointer<ResponseField>.allocate(capacity: 32)

    init(name: String) {
        self.name = Array(name.utf8)
        lowerName = self.name.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let words = (0..<4).map { _ in UInt64(csys_random()) }
        seed = words[0] << 32 | words[1]
        counter = words[2] << 32 | words[3]
    }

    deinit { echoFields.deallocate() }

    /// The request's id: the client's when well-formed, else a new one.
    func assign(_ request: GatewayRequest) -> RequestID {
        if let client = RequestID.clientID(of: request, lowerName: lowerName) {
            return RequestID(name: name, lowerName: lowerName, value: client, generated: false)
        }
        return RequestID(name: name, lowerName: lowerName, value: next(), generated: true)
    }

    func next() -> [UInt8] {
        counter &+= 1  // wraps after 2^64 ids: never, in practice
        let mixed = RequestIDGenerator.splitMix(counter)
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<16 {
            out[i] = LogHex.digit(UInt8(truncatingIfNeeded: seed >> UInt64(60 - 4 * i)) & 15)
            out[16 + i] = LogHex.digit(UInt8(truncatingIfNeeded: mixed >> UInt64(60 - 4 * i)) & 15)
        }
        return out
    }

    /// SplitMix64's output function (Steele, Lea, Flood 2014): invertible,
    /// wrapping multiplications by design.
    static func splitMix(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}

extension RequestIDGenerator {
    /// Runs `body` over the response fields with `id` appended (as
    /// configured, for HTTP/1.1), unless the application sent the field
    /// itself. The copy goes to `echoFields`, kept for the worker's life.
    func withEcho<R>(_ id: RequestID?, _ fields: UnsafeBufferPointer<ResponseField>,
                     _ body: (UnsafeBufferPointer<ResponseField>) -> R) -> R {
        guard let id, !id.isSet(in: fields) else { return body(fields) }
        if echoFields.count <= fields.count {
            echoFields.deallocate()
            echoFields = .allocate(capacity: 2 * fields.count + 8)
        }
        for i in fields.indices { echoFields[i] = fields[i] }
        return id.name.withUnsafeBytes { name in
            id.value.withUnsafeBytes { value in
                echoFields[fields.count] = ResponseField(name: name, value: value)
                return body(UnsafeBufferPointer(rebasing: echoFields[0...fields.count]))
            }
        }
    }
}
