import CPython
import PyBridge

/// Maps a request field name to the Python object a gateway uses for it —
/// the WSGI environ key (`HTTP_USER_AGENT` for `User-Agent`) or the ASGI
/// lower-cased name (`b"user-agent"`) — so a worker builds each once rather
/// than once per request. Open addressing over a fixed table; when the table
/// is full, new names are converted each time instead of cached (memory stays
/// bounded whatever names clients invent).
struct FieldNameCache {
    enum Form {
        /// "HTTP_" + upper case with "-" as "_", a str (PEP 3333).
        case cgiKey
        /// Lower-cased bytes (ASGI `headers`).
        case lowercaseBytes
    }
    private let form: Form
    private struct Entry {
        var hash: UInt64
        var name: [UInt8]   // lower-cased field name
        var key: PyRef
    }
    private var table: [Entry?]
    private var used = 0
    private let mask: Int
    private var scratch = [UInt8](repeating: 0, count: 5 + 256)

    init(form: Form, capacity: Int = 512) {
        self.form = form
        table = Array(repeating: nil, count: capacity)
        mask = capacity - 1
    }

    /// The object for `name` (new reference), or nil if it could not be
    /// made (the caller skips the field).
    mutating func key(for name: UnsafeRawBufferPointer) -> PyRef? {
        var h: UInt64 = 0xcbf29ce484222325
        for b in name { h = (h ^ UInt64(lower(b))) &* 0x100000001b3 }
        var i = Int(truncatingIfNeeded: h) & mask
        var probes = 0
        while let e = table[i], probes < 8 {
            if e.hash == h && e.name.count == name.count && matches(e.name, name) {
                Py.incref(e.key)
                return e.key
            }
            i = (i + 1) & mask
            probes += 1
        }
        guard let key = make(name) else { return nil }
        if table[i] == nil && probes < 8 && used < (mask + 1) * 3 / 4 {
            Py.incref(key)  // the table's reference, kept for the worker's life
            table[i] = Entry(hash: h, name: name.map(lower), key: key)
            used += 1
        }
        return key
    }


    private func matches(_ stored: [UInt8], _ name: UnsafeRawBufferPointer) -> Bool {
        for i in 0..<stored.count where stored[i] != lower(name[i]) { return false }
        return true
    }

    private mutating func make(_ name: UnsafeRawBufferPointer) -> PyRef? {
        switch form {
        case .cgiKey: return makeCGIKey(name)
        case .lowercaseBytes: return makeLowercase(name)
        }
    }

    private mutating func makeLowercase(_ name: UnsafeRawBufferPointer) -> PyRef? {
        if scratch.count < name.count { scratch = [UInt8](repeating: 0, count: name.count) }
        return scratch.withUnsafeMutableBufferPointer { out -> PyRef? in
            for (i, b) in name.enumerated() { out[i] = lower(b) }
            return Py.bytes(UnsafeRawBufferPointer(start: out.baseAddress, count: name.count))
        }
    }

    /// "HTTP_" + the name upper-cased with "-" as "_".
    private mutating func makeCGIKey(_ name: UnsafeRawBufferPointer) -> PyRef? {
        let n = 5 + name.count
        if scratch.count < n { scratch = [UInt8](repeating: 0, count: n) }
        return scratch.withUnsafeMutableBufferPointer { out -> PyRef? in
            out[0] = 0x48; out[1] = 0x54; out[2] = 0x54; out[3] = 0x50; out[4] = 0x5F  // "HTTP_"
            for (i, b) in name.enumerated() {
                var c = b
                if c >= 0x61 && c <= 0x7A { c -= 0x20 }
                if c == 0x2D { c = 0x5F }
                out[5 + i] = c
            }
            return Py.latin1(UnsafeRawBufferPointer(start: out.baseAddress, count: n))
        }
    }
}

@inline(__always) private func lower(_ b: UInt8) -> UInt8 { (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b }
