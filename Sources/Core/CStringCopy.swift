/// A NUL-terminated copy of `s` the caller owns (free with `deallocate()`),
/// for C APIs that keep the pointer (argv for exec, a type's name).
public func allocateCString(_ s: String) -> UnsafeMutablePointer<CChar> {
    let utf8 = Array(s.utf8)
    let p = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count + 1)
    for (i, b) in utf8.enumerated() { p[i] = CChar(bitPattern: b) }
    p[utf8.count] = 0
    return p
}
