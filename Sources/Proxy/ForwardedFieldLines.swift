/// The request's forwarding fields, as the worker finds them: each field
/// line's value, in the order the lines came, pointing into the worker's
/// own buffer (nothing is copied). Fill one per request while walking the
/// header table, then hand it to `ForwardedResolver.resolve`.
///
///     var lines = ForwardedFieldLines()
///     for each header (name, value): lines.append(name: name, value: value)
///     let result = resolver.resolve(peer: peer, fields: lines)
///
/// Several lines of one field form one list, in order (RFC 9110 §5.3: a
/// recipient may combine them into one value joined by commas, without
/// changing the meaning). So `X-Forwarded-For: a` then
/// `X-Forwarded-For: b, c` is the chain `a, b, c`.
///
/// Fixed capacity, no allocation: `Forwarded` and `X-Forwarded-For` keep
/// up to `maxHops` lines each (a line holds at least one hop, except an
/// empty one, so more lines than that are over the hop cap in practice);
/// the other fields keep 8. A field with more lines than its capacity is
/// ignored as a whole, like a chain over the cap.
public struct ForwardedFieldLines {
    var forwarded = LineList<32>()
    var xForwardedFor = LineList<32>()
    var xForwardedProto = LineList<8>()
    var xForwardedHost = LineList<8>()
    var xForwardedPort = LineList<8>()

    public init() {}

    /// No forwarding field at all: the common case, nothing to resolve.
    public var isEmpty: Bool {
        forwarded.isEmpty && xForwardedFor.isEmpty && xForwardedProto.isEmpty && xForwardedHost.isEmpty
            && xForwardedPort.isEmpty
    }

    /// Adds a line of `field`.
    public mutating func append(_ field: ForwardedField, value: UnsafeRawBufferPointer) {
        switch field {
        case .forwarded: forwarded.append(value)
        case .xForwardedFor: xForwardedFor.append(value)
        case .xForwardedProto: xForwardedProto.append(value)
        case .xForwardedHost: xForwardedHost.append(value)
        case .xForwardedPort: xForwardedPort.append(value)
        }
    }

    /// Adds the line when `name` is one of the forwarding fields; false
    /// (and nothing kept) for any other field.
    @discardableResult
    public mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard let field = ForwardedField(name: name) else { return false }
        append(field, value: value)
        return true
    }
}

/// The fields `ForwardedResolver` reads.
public enum ForwardedField: UInt8, CaseIterable, Sendable {
    /// RFC 7239.
    case forwarded
    case xForwardedFor
    case xForwardedProto
    case xForwardedHost
    case xForwardedPort

    /// The field a name denotes, in any case (RFC 9110 §5.1).
    public init?(name: UnsafeRawBufferPointer) {
        switch name.count {
        case 9 where name.equalsIgnoringCase("forwarded"): self = .forwarded
        case 15 where name.equalsIgnoringCase("x-forwarded-for"): self = .xForwardedFor
        case 16 where name.equalsIgnoringCase("x-forwarded-host"): self = .xForwardedHost
        case 16 where name.equalsIgnoringCase("x-forwarded-port"): self = .xForwardedPort
        case 17 where name.equalsIgnoringCase("x-forwarded-proto"): self = .xForwardedProto
        default: return nil
        }
    }
}

/// Up to `capacity` field lines, inline.
struct LineList<let capacity: Int> {
    private var lines = InlineArray<capacity, UnsafeRawBufferPointer>(repeating: UnsafeRawBufferPointer(start: nil, count: 0))
    private(set) var count = 0
    /// More lines came than fit: the field is ignored.
    private(set) var overflowed = false

    var isEmpty: Bool { count == 0 && !overflowed }

    mutating func append(_ line: UnsafeRawBufferPointer) {
        guard count < capacity else {
            overflowed = true
            return
        }
        lines[count] = line
        count += 1
    }

    subscript(index: Int) -> UnsafeRawBufferPointer { lines[index] }
}
