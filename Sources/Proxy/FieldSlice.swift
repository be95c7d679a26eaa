/// Bytes of a header value, pointing into the caller's buffer: valid as
/// long as the field value it was cut from. Two slices are equal when their
/// bytes are (where they lie does not matter).
public struct FieldSlice: Equatable, CustomStringConvertible {
    public let bytes: UnsafeRawBufferPointer

    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public static func == (a: FieldSlice, b: FieldSlice) -> Bool { a.bytes.elementsEqual(b.bytes) }

    /// The bytes as text (tests and logs; not for the request path).
    public var description: String { String(decoding: bytes, as: UTF8.self) }
}
