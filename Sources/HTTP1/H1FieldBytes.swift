/// A field line the server writes, as the caller stores it: the name and
/// value bytes, without the ": " and CRLF the writers add (RFC 9112 §5).
/// The server's response fields adopt it, so the head writers take them as
/// they are, without a copy into an HTTP/1 type.
///
/// The bytes are written as given: validating names (tokens) and values (no
/// CR, LF or NUL, RFC 9110 §5.5) is the caller's job (`H1Field`), done once
/// where the application hands them over.
public protocol H1FieldBytes {
    var name: UnsafeRawBufferPointer { get }
    var value: UnsafeRawBufferPointer { get }
}
