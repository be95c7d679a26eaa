// The list a session decodes a field section into (QPACK, RFC 9204 §4.5)
// before it becomes a request head or trailers. Decoding and taking the
// result happen in one call, so the sessions of one thread can share one
// list: its capacity (about 1.7 KB, kept so that a request decodes without
// allocating) is then paid once per thread, not once per idle connection.
// The same goes for the buffer a response's field section is encoded into.

import HTTPFields

/// A decoding scratch list for the `H3Session`s of one thread.
public final class H3HeaderScratch {
    var list = HeaderList(reservingBytes: 1024, fields: 32)
    /// The response field section being encoded (between `beginHeaders` and
    /// `endHeaders`, which the glue calls in one go) and the lower-cased name
    /// of the field being added: shared for the same reason.
    var sendSection: [UInt8] = []
    var nameScratch: [UInt8] = []

    public init() {
        sendSection.reserveCapacity(256)
    }
}
