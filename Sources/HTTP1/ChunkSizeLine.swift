/// The line that opens each chunk (RFC 9112 §7.1, §7.1.1):
///
///     chunk-size CRLF / chunk-size chunk-ext CRLF
///     chunk-size   = 1*HEXDIG
///     chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
///     chunk-ext-name = token
///     chunk-ext-val  = token / quoted-string
///
/// Parsed only when complete (the decoder consumes nothing of a partial
/// line), but refused as soon as a prefix proves it bad: a 17th hex digit or
/// a size past Int64 (§7.1: "Recipients MUST anticipate potentially large
/// hexadecimal numerals and prevent parsing errors due to integer conversion
/// overflows"), or no CRLF within `maxChunkExtensionBytes` after the size.
/// Extensions are validated and ignored (§7.1.1: "A recipient MUST ignore
/// unrecognized chunk extensions"); we bound them, as §7.1.1 allows a server
/// to "limit the total length of chunk extensions received in a request".
/// Whitespace after the size is only accepted as BWS before a ";".
enum ChunkSizeLine {
    enum Parsed { case needMore, complete(size: Int64, end: Int) }

    static func parse(_ b: Bytes, from start: Int, maxExtensionBytes: Int) throws(H1Error) -> Parsed {
        var i = start
        var size: UInt64 = 0
        while i < b.count, let digit = ByteClass.hexValue(b[i]) {
            guard i - start < 16 else { throw .chunkSizeOverflow }
            // At most 16 digits, so the shift never loses bits.
            size = size &<< 4 | UInt64(digit)
            guard size <= UInt64(Int64.max) else { throw .chunkSizeOverflow }
            i += 1
        }
        if i == b.count { return .needMore }
        if i == start { throw .invalidChunkSize }
        let extensionStart = i
        let lineLimit = extensionStart + maxExtensionBytes + 2  // + CRLF
        guard let lf = b.firstIndex(of: Byte.lf, from: extensionStart, to: Swift.min(b.count, lineLimit)) else {
            if b.count >= lineLimit { throw .chunkExtensionTooLong }
            return .needMore
        }
        // RFC 9112 §2.2: no bare LF, whether right after the size or later.
        guard lf > extensionStart, b[lf - 1] == Byte.cr else { throw .chunkBareLF }
        try validateExtensions(b, extensionStart, lf - 1)
        return .complete(size: Int64(size), end: lf + 1)
    }

    /// Validates `*( BWS ";" BWS name [ BWS "=" BWS value ] )` over start..<end.
    static func validateExtensions(_ b: Bytes, _ start: Int, _ end: Int) throws(H1Error) {
        var i = start
        while i < end {
            i = skipBWS(b, i, end)
            guard i < end, b[i] == Byte.semicolon else { throw .invalidChunkExtension }
            i = skipBWS(b, i + 1, end)
            let nameStart = i
            while i < end && ByteClass.isTchar(b[i]) { i += 1 }
            guard i > nameStart else { throw .invalidChunkExtension }
            let afterName = skipBWS(b, i, end)
            guard afterName < end, b[afterName] == Byte.equals else { continue }
            i = skipBWS(b, afterName + 1, end)
            guard i < end else { throw .invalidChunkExtension }
            if b[i] == Byte.dquote {
                i = try skipQuotedString(b, i, end)
            } else {
                let valueStart = i
                while i < end && ByteClass.isTchar(b[i]) { i += 1 }
                guard i > valueStart else { throw .invalidChunkExtension }
            }
        }
    }

    private static func skipBWS(_ b: Bytes, _ from: Int, _ end: Int) -> Int {
        var i = from
        while i < end && ByteClass.isOWS(b[i]) { i += 1 }
        return i
    }

    /// quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 9110 §5.6.4);
    /// `from` is the opening quote. Returns the index after the closing one.
    static func skipQuotedString(_ b: Bytes, _ from: Int, _ end: Int) throws(H1Error) -> Int {
        var i = from + 1
        while i < end {
            let c = b[i]
            if c == Byte.dquote { return i + 1 }
            if c == Byte.backslash {
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                guard i + 1 < end, ByteClass.isFieldValueByte(b[i + 1]) else { throw .invalidChunkExtension }
                i += 2
                continue
            }
            // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
            guard ByteClass.isFieldValueByte(c) else { throw .invalidChunkExtension }
            i += 1
        }
        throw .invalidChunkExtension
    }
}
