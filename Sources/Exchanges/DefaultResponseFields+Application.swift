import Core

extension DefaultResponseFields {
    /// The default lines for a response whose application fields are
    /// `fields`: each default whose name the application also set is left
    /// out (the application wins; names compare in any case, RFC 9110
    /// §5.1). One pass over the application's fields, each compared with
    /// the defaults of its length only.
    public func lines(for fields: UnsafeBufferPointer<ResponseField>) -> DefaultFieldLines {
        var suppressed: UInt64 = 0
        for f in fields { suppressed |= matching(f.name) }
        return lines(except: suppressed)
    }
}
