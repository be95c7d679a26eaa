/// A response header the application supplied, pointing into its Python
/// objects (valid while the gateway holds them).
public struct ResponseField {
    public var name: UnsafeRawBufferPointer
    public var value: UnsafeRawBufferPointer
    public init(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) { self.name = name; self.value = value }

    /// The field is `Date`, in any case.
    @inlinable public var isDate: Bool {
        name.count == 4 && (name[0] | 0x20) == 0x64 && (name[1] | 0x20) == 0x61 && (name[2] | 0x20) == 0x74
            && (name[3] | 0x20) == 0x65
    }
}

/// The response head the gateway hands to the transport.
public struct ResponseHead {
    public var status: Int
    /// The reason phrase from the application ("OK"), for HTTP/1.
    public var reason: UnsafeRawBufferPointer
    public var fields: UnsafeBufferPointer<ResponseField>
    /// The application's Content-Length, or the length the gateway knows
    /// (a list of bytes); nil when the length is unknown.
    public var contentLength: Int64?
    /// True when the application asked for `Connection: close`.
    public var close: Bool
    public init(status: Int, reason: UnsafeRawBufferPointer, fields: UnsafeBufferPointer<ResponseField>,
                contentLength: Int64?, close: Bool) {
        self.status = status
        self.reason = reason
        self.fields = fields
        self.contentLength = contentLength
        self.close = close
    }
}
