import Core
import Gateway
import HTTPFields

/// A request head decoded from HPACK or QPACK, copied out of the decoder's
/// scratch for the whole exchange (one allocation for the field spans and
/// the bytes, reused by a pooled HTTP/2 stream), and the gateway's view of it. Shared by HTTP/2 and HTTP/3
/// streams: both decode into the version-independent `RequestHead`.
///
/// `:authority` becomes the first field as `host` (replacing any `host`
/// field, as the ASGI spec asks), `:path` splits into path and query.
struct DecodedRequest: ~Copyable {
    /// Names and values back to back (the spans point here), then the name
    /// `host` for the field made from `:authority`.
    private(set) var storage: UnsafeMutableRawBufferPointer
    private(set) var fields: UnsafeMutablePointer<FieldSpans>
    private(set) var fieldCount = 0
    /// What the block holds without growing (`refill`).
    private var fieldCapacity: Int
    private var byteCapacity: Int

    init(_ head: RequestHead) {
        (fields, storage) = DecodedRequest.allocate(fields: head.fields.count + 1, bytes: head.storage.count + 4)
        fieldCapacity = head.fields.count + 1
        byteCapacity = head.storage.count + 4
        copy(head)
    }

    /// The next request's head in the same block when it fits (a pooled
    /// HTTP/2 stream: no allocation), else in a new one. The gateway's
    /// request built from the previous head must be gone.
    mutating func refill(_ head: RequestHead) {
        fieldCount = 0
        let needFields = head.fields.count + 1, needBytes = head.storage.count + 4
        if needFields > fieldCapacity || needBytes > byteCapacity {
            UnsafeMutableRawPointer(fields).deallocate()
            fieldCapacity = max(needFields, fieldCapacity)
            byteCapacity = max(needBytes, byteCapacity)
            (fields, storage) = DecodedRequest.allocate(fields: fieldCapacity, bytes: byteCapacity)
        }
        copy(head)
    }

    /// One block: the field spans first (aligned), then the bytes.
    private static func allocate(fields count: Int, bytes: Int)
        -> (UnsafeMutablePointer<FieldSpans>, UnsafeMutableRawBufferPointer) {
        let spans = MemoryLayout<FieldSpans>.stride * count
        let block = UnsafeMutableRawPointer.allocate(byteCount: spans + bytes, alignment: MemoryLayout<FieldSpans>.alignment)
        return (block.bindMemory(to: FieldSpans.self, capacity: count),
                UnsafeMutableRawBufferPointer(start: block + spans, count: bytes))
    }

    /// The head's bytes, then `host` (+ the field from :authority).
    private func copy(_ head: RequestHead) {
        head.storage.withUnsafeBytes { src in
            if src.count > 0 { storage.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: src.count) }
        }
        let host: StaticString = "host"
        (storage.baseAddress! + head.storage.count).copyMemory(from: host.utf8Start, byteCount: 4)
    }

    deinit {
        UnsafeMutableRawPointer(fields).deallocate()  // the block's start
    }

    /// The gateway's request, or nil for a CONNECT request (no `:path`),
    /// which no application here can serve.
    mutating func gatewayRequest(_ head: RequestHead, httpVersion: StaticString, isHead: Bool,
                                 peer: PeerInfo) -> GatewayRequest? {
        let base = UnsafeRawPointer(storage.baseAddress!)
        let hostName = ByteSpan(offset: head.storage.count, length: 4)
        var n = 0
        if head.authority.count > 0 {
            fields[n] = FieldSpans(name: hostName, value: head.authority)
            n += 1
        }
        // Index loops, not `for f in` / `firstIndex(of:)`: an unoptimised
        // build runs those through generic code that mallocs per element
        // (tests/e2e/test_allocations.py).
        for i in head.fields.indices {
            let f = head.fields[i]
            if head.authority.count > 0 && f.name.count == 4 && isHost(UnsafeRawBufferPointer(start: base + f.name.start, count: 4)) {
                continue
            }
            fields[n] = FieldSpans(name: f.name, value: f.value)
            n += 1
        }
        fieldCount = n
        let method = UnsafeRawBufferPointer(start: base + head.method.start, count: head.method.count)
        if method.count == 7 && method[0] == 0x43 && method[1] == 0x4F && head.path.count == 0 { return nil }
        var path = head.path
        var query = ByteSpan(offset: head.path.start + head.path.count, length: 0)
        let target = UnsafeRawBufferPointer(start: base + head.path.start, count: head.path.count)
        var q = 0
        while q < target.count && target[q] != 0x3F { q += 1 }
        if q < target.count {
            path = ByteSpan(offset: head.path.start, length: q)
            query = ByteSpan(offset: head.path.start + q + 1, length: head.path.count - q - 1)
        }
        return GatewayRequest(base: base, method: head.method, target: head.path, path: path, query: query,
                              httpVersion: httpVersion, isHead: isHead, fieldCount: n,
                              fields: UnsafePointer(fields), peer: peer)
    }

    /// Whether `head` is a HEAD request.
    static func isHead(_ head: RequestHead) -> Bool {
        head.method.count == 4 && head.storage[head.method.start..<head.method.end].elementsEqual("HEAD".utf8)
    }
}

@inline(__always)
private func isHost(_ b: UnsafeRawBufferPointer) -> Bool {
    (b[0] | 0x20) == 0x68 && (b[1] | 0x20) == 0x6F && (b[2] | 0x20) == 0x73 && (b[3] | 0x20) == 0x74
}
