// One value per packet number space (RFC 9000 §12.3), held inline: a
// connection's per-space state (its loss-detection ledgers, ECN counters)
// costs no heap block of its own, which an array of three would (a block
// each, kept for the connection's life: issue 15's idle connection).
//
// A fixed three-element collection indexed by `PacketNumberSpace.rawValue`,
// so it reads as the arrays it replaces (`ledgers[s]`, `.contains`,
// `.indices`).

public struct PerSpace<Element> {
    private var initial: Element
    private var handshake: Element
    private var application: Element

    public init(repeating value: Element) {
        initial = value
        handshake = value
        application = value
    }

    public init(_ make: (PacketNumberSpace) -> Element) {
        initial = make(.initial)
        handshake = make(.handshake)
        application = make(.application)
    }
}

extension PerSpace: MutableCollection, RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { 3 }
    public func index(after i: Int) -> Int { i + 1 }
    public func index(before i: Int) -> Int { i - 1 }
    /// A plain range, as an array's: the default indices hold a copy of
    /// the collection, and mutating an element while iterating them would
    /// copy the element's buffers (copy-on-write).
    public var indices: Range<Int> { 0..<3 }

    public subscript(index: Int) -> Element {
        get {
            switch index {
            case 0: initial
            case 1: handshake
            case 2: application
            default: preconditionFailure("packet number space index out of range")
            }
        }
        _modify {
            switch index {
            case 0: yield &initial
            case 1: yield &handshake
            case 2: yield &application
            default: preconditionFailure("packet number space index out of range")
            }
        }
    }
}

extension PerSpace: ExpressibleByArrayLiteral {
    /// Three values, Initial first (for tests and defaults).
    public init(arrayLiteral elements: Element...) {
        precondition(elements.count == 3, "one value per packet number space")
        initial = elements[0]
        handshake = elements[1]
        application = elements[2]
    }
}

extension PerSpace: Equatable where Element: Equatable {}
extension PerSpace: Sendable where Element: Sendable {}
