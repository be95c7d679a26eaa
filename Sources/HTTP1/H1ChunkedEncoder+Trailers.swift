/// The end of a chunked body that carries trailer fields (RFC 9112 §7.1.2):
///
///     last-chunk       = 1*("0") [ chunk-ext ] CRLF
///     trailer-section  = *( field-line CRLF )
///     chunked-body     = *chunk last-chunk trailer-section CRLF
///
/// Send trailers only where `H1ResponseFraming.trailers` allows them; with
/// none this is `writeLastChunk`'s "0\r\n\r\n".
extension H1ChunkedEncoder {
    /// Bytes `writeLastChunk(trailers:into:)` writes.
    @inlinable
    public static func lastChunkLength<Field: H1FieldBytes>(trailers: UnsafeBufferPointer<Field>) -> Int {
        var n = lastChunkLength
        for f in trailers { n += HeadBytes.fieldLineLength(f.name, f.value) }
        return n
    }

    /// Writes the last chunk, the trailer fields and the final CRLF.
    @inlinable
    @discardableResult
    public static func writeLastChunk<Field: H1FieldBytes>(trailers: UnsafeBufferPointer<Field>,
                                                           into p: UnsafeMutableRawPointer) -> Int {
        var out = HeadBytes(p)
        out.put("0\r\n")
        for f in trailers { out.putFieldLine(f.name, f.value) }
        out.put("\r\n")
        return out.count
    }
}
