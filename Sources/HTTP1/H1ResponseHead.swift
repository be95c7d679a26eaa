import Core

/// The head of a final HTTP/1.1 response, sized and then written into memory
/// the caller reserved (size first, write once, STYLE §2):
///
///     HTTP/1.1 200 OK\r\n                 status line (RFC 9112 §4)
///     <application's fields>\r\n          as given, in order
///     <default fields>\r\n              --header, --server-header
///     date: <date>\r\n                    when the exchange adds one
///     alt-svc: <value>\r\n               when the server advertises HTTP/3
///     content-length: 5\r\n               or transfer-encoding: chunked
///     connection: close\r\n               or keep-alive (1.0), or nothing
///     \r\n
///
/// The framing fields come from `H1ResponseFraming`; an application's own
/// framing and connection fields are dropped by the gateway before they get
/// here.
///
///     let head = H1ResponseHead(status: 200, reason: reason, fields: fields,
///                               framing: framing, date: dateBytes)
///     out.reserve(head.length)
///     out.count += head.write(into: out.base + out.count)
public struct H1ResponseHead<Field: H1FieldBytes> {
    @usableFromInline let status: UInt64
    @usableFromInline let reason: UnsafeRawBufferPointer
    @usableFromInline let fields: UnsafeBufferPointer<Field>
    @usableFromInline let framing: H1ResponseFraming
    /// The server's date, or nil when none is added.
    @usableFromInline let date: UnsafeRawBufferPointer?
    /// The server's `alt-svc` value, or nil.
    @usableFromInline let altSvc: UnsafeRawBufferPointer?
    /// The operator's default fields the application did not override.
    @usableFromInline let defaults: DefaultFieldLines?
    /// Bytes `write(into:)` writes.
    public let length: Int

    /// - Parameters:
    ///   - reason: the application's reason phrase; empty: the registry's
    ///     (`ReasonPhrase`).
    ///   - date: the current IMF-fixdate to write as `date`, or nil when the
    ///     application sent its own: "An origin server with a clock ... MUST
    ///     generate a Date header field" in a 2xx, 3xx or 4xx response, and
    ///     may in any other (RFC 9110 §6.6.1). The exchange decides
    ///     (`HTTPExchange.ResponsePlan.addsDate`); the fields are not
    ///     scanned again here.
    ///   - altSvc: the server's `alt-svc` value (RFC 9114 §3.1.1), or nil
    ///     when it advertises nothing or the application gave its own
    ///     (`HTTPExchange.ResponsePlan.hasAltSvc`).
    ///   - defaults: `--header`/`--server-header` lines (nil: none).
    @inlinable
    public init(status: Int, reason: UnsafeRawBufferPointer, fields: UnsafeBufferPointer<Field>,
                framing: H1ResponseFraming, date: UnsafeRawBufferPointer?, altSvc: UnsafeRawBufferPointer? = nil,
                defaults: DefaultFieldLines? = nil) {
        self.status = UInt64(truncatingIfNeeded: status)
        self.reason = reason.isEmpty ? ReasonPhrase.reason(status).rawBytes : reason
        self.fields = fields
        self.framing = framing
        var n = HeadBytes.statusAndFieldsLength(self.status, reasonCount: self.reason.count, fields)
        self.defaults = defaults
        if let defaults { n += defaults.length }
        self.date = date
        if let date { n += 8 + date.count }
        self.altSvc = altSvc
        if let altSvc { n += 11 + altSvc.count }
        if let length = framing.contentLengthField {
            n += 18 + HeadBytes.decimalLength(UInt64(truncatingIfNeeded: length))
        } else if framing.isChunked {
            n += 28
        }
        switch framing.connectionField {
        case .none: break
        case .close: n += 19
        case .keepAlive: n += 24
        }
        length = n + 2
    }

    /// Writes the head at `p`, which has room for `length` bytes; returns
    /// `length`.
    @inlinable
    @discardableResult
    public func write(into p: UnsafeMutableRawPointer) -> Int {
        var out = HeadBytes(p)
        out.putStatusAndFields(status, reason, fields)
        if let defaults { out.cursor += defaults.write(into: out.cursor) }
        if let date {
            out.put("date: ")
            out.put(date)
            out.put("\r\n")
        }
        if let altSvc {
            out.put("alt-svc: ")
            out.put(altSvc)
            out.put("\r\n")
        }
        if let length = framing.contentLengthField {
            out.put("content-length: ")
            out.put(decimal: UInt64(truncatingIfNeeded: length))
            out.put("\r\n")
        } else if framing.isChunked {
            // RFC 9112 §6.1: chunked is the final (here the only) coding.
            out.put("transfer-encoding: chunked\r\n")
        }
        switch framing.connectionField {
        case .none: break
        case .close: out.put("connection: close\r\n")
        case .keepAlive: out.put("connection: keep-alive\r\n")
        }
        out.put("\r\n")
        return out.count
    }
}
