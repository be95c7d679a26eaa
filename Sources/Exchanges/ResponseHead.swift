/// A response header the application supplied, pointing into its Python
/// objects (valid while the gateway holds them).
public struct ResponseField {
    public var name: UnsafeRawBufferPointer
    public var value: UnsafeRawBufferPointer
    public init(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) { self.name = name; self.value = value }
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
