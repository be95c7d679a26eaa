/// The two steps every `#element` list reader takes (RFC 9110 §5.6.1):
/// find where the next element starts, and after an element, require the end
/// of the value or a comma. `ProtocolListReader` and `ExtensionListReader`
/// differ only in what an element is.
extension FieldSyntax {
    /// Moves `i` over OWS and empty list elements to the start of the next
    /// element; false at the end of `b`. §5.6.1: "a recipient MUST accept
    /// empty list elements" (`a, , b`, a leading or trailing comma).
    static func skipToListElement(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> Bool {
        while true {
            skipOWS(b, &i)
            guard i < b.count else { return false }
            guard b[i] == UInt8(ascii: ",") else { return true }
            i += 1
        }
    }

    /// After an element: OWS, then the end of `b` or a comma, which is
    /// consumed; false when anything else follows the element.
    static func endListElement(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> Bool {
        skipOWS(b, &i)
        guard i < b.count else { return true }
        guard b[i] == UInt8(ascii: ",") else { return false }
        i += 1
        return true
    }
}
