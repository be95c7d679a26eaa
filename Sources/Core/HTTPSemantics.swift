/// Rules of HTTP semantics (RFC 9110) that hold whatever version carries a
/// message. Each is written here once: the transport-neutral exchange
/// (`Exchanges`) and each version's framing (`HTTP1`, `HTTP2`, later
/// `HTTP3`) ask these instead of restating them.
public enum HTTPSemantics {
    /// Responses with this status never have content: 1xx, 204 and 304
    /// (RFC 9110 §6.4.1). A Content-Length field on them is not sent
    /// either: "A server MUST NOT send a Content-Length header field in any
    /// response with a status code of 1xx (Informational) or 204 (No
    /// Content)" (§8.6); on a 304 it would describe the selected
    /// representation, which the server cannot check.
    @inlinable
    public static func statusHasNoContent(_ status: Int) -> Bool {
        status < 200 || status == 204 || status == 304
    }

    /// No body follows the head: the response to HEAD (RFC 9110 §9.3.2) or
    /// a status without content.
    @inlinable
    public static func isBodyless(status: Int, isHead: Bool) -> Bool {
        isHead || statusHasNoContent(status)
    }

    /// A final response carries a status of 200–999: 1xx responses are
    /// interim (RFC 9110 §15.2), and three digits is all a status line or a
    /// `:status` can hold (§15).
    @inlinable
    public static func isFinalStatus(_ status: Int) -> Bool {
        (200...999).contains(status)
    }

    /// The field name is `Date`, in any case (names are case-insensitive,
    /// RFC 9110 §5.1); an origin server adds one unless the application
    /// gave it (§6.6.1).
    @inlinable
    public static func isDateField(_ name: UnsafeRawBufferPointer) -> Bool {
        name.count == 4 && (name[0] | 0x20) == 0x64 && (name[1] | 0x20) == 0x61 && (name[2] | 0x20) == 0x74
            && (name[3] | 0x20) == 0x65
    }

    /// The field name is `Alt-Svc` (RFC 7838 §3), in any case: the server
    /// advertises HTTP/3 with one unless the application gave its own
    /// (RFC 9114 §3.1.1).
    @inlinable
    public static func isAltSvcField(_ name: UnsafeRawBufferPointer) -> Bool {
        name.count == 7 && name.equalsIgnoringASCIICase("alt-svc")
    }
}
