import Core

/// A whole response the server makes itself, for a request it refuses
/// before (or instead of) the application — 400, 408, 413, 431, 501, 505:
/// a short text/plain body (the reason phrase and a newline), then the
/// connection closes (RFC 9112 §9.6), so it always says "close".
///
///     HTTP/1.1 413 Content Too Large\r\n
///     content-type: text/plain; charset=utf-8\r\n
///     content-length: 18\r\n
///     connection: close\r\n
///     date: <date>\r\n                  unless --no-date-header
///     <extra field>\r\n                   if any
///     <default fields>\r\n              --header, --server-header
///     \r\n
///     Content Too Large\n
///
///     let response = H1ErrorResponse(status: 413, extraField: nil, date: dateBytes)
///     out.reserve(response.length)
///     out.count += response.write(into: out.base + out.count)
public struct H1ErrorResponse {
    let status: UInt64
    let reason: StaticString
    let extraField: StaticString?
    let date: UnsafeRawBufferPointer?
    let defaults: DefaultFieldLines?
    /// Bytes `write(into:)` writes, head and body.
    public let length: Int

    /// - Parameters:
    ///   - extraField: one more field line, without its CRLF
    ///     ("allow: GET, HEAD").
    ///   - date: the current IMF-fixdate (RFC 9110 §6.6.1), or nil
    ///     (--no-date-header).
    ///   - defaults: `--header`/`--server-header` lines (nil: none).
    public init(status: Int, extraField: StaticString?, date: UnsafeRawBufferPointer?, defaults: DefaultFieldLines? = nil) {
        self.status = UInt64(truncatingIfNeeded: status)
        reason = ReasonPhrase.reason(status)
        self.extraField = extraField
        self.date = date
        self.defaults = defaults
        let bodyLength = reason.utf8CodeUnitCount + 1
        var n = HeadBytes.statusLineLength(self.status, reasonCount: reason.utf8CodeUnitCount)
        n += H1ErrorResponse.fixedFields.utf8CodeUnitCount
        n += HeadBytes.decimalLength(UInt64(bodyLength))
        n += H1ErrorResponse.close.utf8CodeUnitCount
        if let date { n += 6 + date.count + 2 }
        if let extraField { n += extraField.utf8CodeUnitCount + 2 }
        if let defaults { n += defaults.length }
        length = n + 2 + bodyLength
    }

    private static let fixedFields: StaticString = "content-type: text/plain; charset=utf-8\r\ncontent-length: "
    private static let close: StaticString = "\r\nconnection: close\r\n"

    /// Writes the response at `p`, which has room for `length` bytes;
    /// returns `length`.
    @discardableResult
    public func write(into p: UnsafeMutableRawPointer) -> Int {
        var out = HeadBytes(p)
        out.putStatusLine(status, reason.rawBytes)
        out.put(H1ErrorResponse.fixedFields)
        out.put(decimal: UInt64(reason.utf8CodeUnitCount + 1))
        out.put(H1ErrorResponse.close)
        if let date {
            out.put("date: ")
            out.put(date)
            out.put("\r\n")
        }
        if let extraField {
            out.put(extraField)
            out.put("\r\n")
        }
        if let defaults { out.cursor += defaults.write(into: out.cursor) }
        out.put("\r\n")
        out.put(reason)
        out.put("\n")
        return out.count
    }
}
