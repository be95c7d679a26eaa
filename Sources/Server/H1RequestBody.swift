import HTTP1

/// How an HTTP/1.1 request's body is framed and how far it has been read
/// (the bytes themselves stay in the connection's input buffer; the chunked
/// decoder is in the pooled `H1RequestParsing`). Reset from each head.
struct H1RequestBody {
    var framing: H1BodyFraming = .none
    /// Content-Length bytes not yet handed out.
    var remaining: Int64 = 0
    /// Payload bytes of the current chunk not yet handed out.
    var chunkCarry = 0
    /// Nothing more of this body will come (or can be read).
    var complete = true
    /// Bytes that may still be dropped after the response before the
    /// connection is given up instead (see `discardBody`).
    var discardBudget: Int64 = 0

    init() {}

    init(framing: H1BodyFraming) {
        self.framing = framing
        switch framing {
        case .none:
            complete = true
        case .contentLength(let n):
            remaining = n
            complete = n == 0
        case .chunked:
            complete = false
        }
    }
}
