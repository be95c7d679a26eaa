// The HTTP/2 API is expressed in the version-independent field types
// (`HeaderList`, `RequestHead`, `FieldSyntax`, Huffman and prefixed integers)
// that HTTP/2 shares with HTTP/3; re-exporting them keeps `import HTTP2`
// enough for users of this module, and the HTTP/2 names as aliases.

@_exported import HTTPFields

/// A validated HTTP/2 request head or trailer section (RFC 9113 §8.3.1).
public typealias H2RequestHead = RequestHead
/// One regular field of an `H2RequestHead`.
public typealias H2Field = RequestField
/// The largest HPACK integer the decoder accepts (RFC 7541 §5.1 allows a
/// limit); beyond it, COMPRESSION_ERROR.
public let maxHPACKInteger = maxPrefixedInteger
