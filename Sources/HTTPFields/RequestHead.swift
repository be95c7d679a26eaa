// A validated request header section (RFC 9113 §8.3.1, RFC 9114 §4.3.1) or
// trailer section, the same for HTTP/2 and HTTP/3.
//
// The HPACK or QPACK decoder materialises every name and value into one arena; the
// head takes a copy of that arena as `storage` (one allocation per request,
// none per field) and describes the pseudo-header fields and the regular
// fields as spans into it. Cookie crumbs (§8.2.3) are joined with "; " into
// one `cookie` field, appended at the end of the storage.

import Core

/// One regular field: spans into `RequestHead.storage`. Names are lower
/// case (upper case makes a request malformed, RFC 9113 §8.2.1, RFC 9114
/// §4.2).
public struct RequestField: Sendable, Equatable {
    public var name: ByteSpan
    public var value: ByteSpan

    public init(name: ByteSpan, value: ByteSpan) {
        self.name = name
        self.value = value
    }
}

/// A request head (or trailers: then every pseudo-header span is empty).
public struct RequestHead: Sendable {
    /// Decoded names and values back to back.
    public var storage: [UInt8]
    /// `:method`.
    public var method: ByteSpan
    /// `:scheme`; empty for CONNECT.
    public var scheme: ByteSpan
    /// `:authority`, or the Host field when `:authority` is absent; empty if
    /// neither is present.
    public var authority: ByteSpan
    /// `:path`; empty for CONNECT.
    public var path: ByteSpan
    /// `:protocol` of an extended CONNECT (RFC 8441); empty otherwise.
    public var protocolName: ByteSpan
    /// Regular fields in order (cookie crumbs joined into one).
    public var fields: [RequestField]
    /// The validated content-length, if present.
    public var contentLength: Int64?
    /// `expect: 100-continue`: the client may hold its body back until an
    /// interim 100 (RFC 9110 §10.1.1).
    public var expectsContinue = false

    public init(storage: [UInt8] = [], method: ByteSpan = .empty, scheme: ByteSpan = .empty,
                authority: ByteSpan = .empty, path: ByteSpan = .empty, protocolName: ByteSpan = .empty,
                fields: [RequestField] = [], contentLength: Int64? = nil) {
        self.storage = storage
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.protocolName = protocolName
        self.fields = fields
        self.contentLength = contentLength
    }

    /// Empty again, keeping the arrays' capacity (RequestFieldValidator
    /// builds into a reused head).
    public mutating func reset() {
        storage.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        method = .empty
        scheme = .empty
        authority = .empty
        path = .empty
        protocolName = .empty
        contentLength = nil
        expectsContinue = false
    }

    /// The bytes of `span`.
    public subscript(span: ByteSpan) -> ArraySlice<UInt8> {
        storage[span.start ..< span.end]
    }

    /// Calls `body` with the bytes of `span` in place.
    public func withBytes<R>(of span: ByteSpan, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[span.start ..< span.end])) }
    }
}
