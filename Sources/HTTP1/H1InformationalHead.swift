import Core

/// The head of a 1xx interim response (RFC 9110 §15.2): the status line with
/// the registry's reason, the given fields, and the empty line — no date,
/// no framing, no connection field, since it is not the response that
/// decides the connection's fate and carries no body (RFC 9112 §6.3 rule 1).
/// Not for HTTP/1.0 clients (`H1ResponseFraming.allowsInformational`).
///
///     let head = H1InformationalHead(status: 103, fields: links)
///     out.reserve(head.length)
///     out.count += head.write(into: out.base + out.count)
public struct H1InformationalHead<Field: H1FieldBytes> {
    @usableFromInline let status: UInt64
    @usableFromInline let reason: UnsafeRawBufferPointer
    @usableFromInline let fields: UnsafeBufferPointer<Field>
    /// Bytes `write(into:)` writes.
    public let length: Int

    @inlinable
    public init(status: Int, fields: UnsafeBufferPointer<Field>) {
        self.status = UInt64(truncatingIfNeeded: status)
        reason = ReasonPhrase.reason(status).rawBytes
        self.fields = fields
        length = HeadBytes.statusAndFieldsLength(self.status, reasonCount: reason.count, fields) + 2
    }

    /// Writes the head at `p`, which has room for `length` bytes; returns
    /// `length`.
    @inlinable
    @discardableResult
    public func write(into p: UnsafeMutableRawPointer) -> Int {
        var out = HeadBytes(p)
        out.putStatusAndFields(status, reason, fields)
        out.put("\r\n")
        return out.count
    }
}
