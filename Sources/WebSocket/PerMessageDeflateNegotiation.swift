import Core

/// Server-side negotiation of permessage-deflate (RFC 7692 §5, §7.1).
///
/// Theory of operation. The client lists offers in `Sec-WebSocket-Extensions`
/// (possibly several field lines, possibly several permessage-deflate offers
/// as fallbacks, in order of preference). `negotiate(fieldValues:)` walks them
/// with `ExtensionListReader` and accepts the first permessage-deflate offer
/// whose parameters are valid (§7.1), returning the agreed parameters; the
/// response field is `agreed.responseValue`. An offer that is not valid is
/// declined — skipped, the handshake goes on — as §5.1 and §7 ask ("a server
/// MUST decline an extension negotiation offer ... if ... invalid"):
///
///     unknown parameter                          → decline (§7)
///     a parameter given twice                    → decline (§7)
///     *_no_context_takeover with a value         → decline (§7.1.1)
///     server_max_window_bits without value, or
///       not 8..15 written without leading zeros  → decline (§7.1.2.1)
///     client_max_window_bits value not 8..15     → decline (§7.1.2.2)
///
/// A field value that is not `1#extension` at all ends the reading of that
/// value (its earlier offers still count); it does not fail the handshake.
///
/// What the server answers, for an accepted offer:
///
///     server_no_context_takeover      echoed: we reset our compressor after each message
///     client_no_context_takeover      echoed: the client resets; we reset our decompressor too
///     server_max_window_bits=N        echoed: we compress with a 2^N window (N = 8: see below)
///     client_max_window_bits=N        echoed: the client uses ≤ 2^N; we inflate with 2^max(N, 9)
///     client_max_window_bits (bare)   not answered: the client may use 2^15, we inflate with 2^15
///
/// Window bits 8: zlib's deflate refuses a 256-byte window for raw DEFLATE
/// (`deflateInit2` turns 8 into 9 for the zlib format and rejects it for raw
/// streams, because of a long-standing bug in its 256-byte window), and a
/// 512-byte window would produce distances a client that asked for 256 cannot
/// resolve. So an offer with server_max_window_bits=8 is accepted and
/// answered as such, but our messages on that connection are sent
/// uncompressed (RSV1 clear is allowed for any message, §6) — the client's
/// direction is still compressed. On the receiving side a window of 9 bits
/// inflates everything a 2^8-window sender can produce (and also what a zlib
/// sender that quietly turned 8 into 9 produces), so we inflate with 9 —
/// like Python's websockets, which declines 8 for its own deflate side and
/// suggests 9.
public struct PerMessageDeflateParameters: Equatable, Sendable {
    public var serverNoContextTakeover = false
    public var clientNoContextTakeover = false
    /// The limit the client asked us to keep to (answered back); nil: 15.
    public var serverMaxWindowBits: Int?
    /// The limit answered to the client; nil: not answered (the client may
    /// use up to 15).
    public var clientMaxWindowBits: Int?

    public init(serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false,
                serverMaxWindowBits: Int? = nil, clientMaxWindowBits: Int? = nil) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
    }

    /// The window our compressor uses (2^bits bytes).
    public var deflateWindowBits: Int { serverMaxWindowBits ?? 15 }
    /// Whether we compress at all: not with a 2^8 window (see the type's notes).
    public var serverCompresses: Bool { deflateWindowBits >= 9 }
    /// The window our decompressor uses: at least 9 (see the type's notes).
    public var inflateWindowBits: Int { max(clientMaxWindowBits ?? 15, 9) }

    /// The `Sec-WebSocket-Extensions` value of the response (§7.1).
    public var responseValue: String {
        var value = "permessage-deflate"
        if serverNoContextTakeover { value += "; server_no_context_takeover" }
        if clientNoContextTakeover { value += "; client_no_context_takeover" }
        if let bits = serverMaxWindowBits { value += "; server_max_window_bits=\(bits)" }
        if let bits = clientMaxWindowBits { value += "; client_max_window_bits=\(bits)" }
        return value
    }

    /// The first acceptable permessage-deflate offer among the request's
    /// `Sec-WebSocket-Extensions` field values (in field order), or nil.
    public static func negotiate(fieldValues: [UnsafeRawBufferPointer]) -> PerMessageDeflateParameters? {
        for value in fieldValues {
            var reader = ExtensionListReader(value)
            while true {
                let next: ExtensionOffer?
                do { next = try reader.next() } catch { break }  // malformed: stop reading this value
                guard let offer = next else { break }
                guard FieldSyntax.equalsIgnoringCase(value, offer.name.start, offer.name.end, "permessage-deflate") else { continue }
                if let agreed = accept(offer, in: value) { return agreed }
            }
        }
        return nil
    }

    /// The answer to one permessage-deflate offer, or nil to decline it.
    static func accept(_ offer: ExtensionOffer, in value: UnsafeRawBufferPointer) -> PerMessageDeflateParameters? {
        var agreed = PerMessageDeflateParameters()
        var seen: UInt8 = 0
        var parameters = offer.parameters(in: value)
        while let parameter = parameters.next() {
            let name = parameter.name
            func named(_ text: StaticString) -> Bool {
                name.count == text.utf8CodeUnitCount && FieldSyntax.equalsIgnoringCase(value, name.start, name.end, text)
            }
            let bit: UInt8
            if named("server_no_context_takeover") {
                guard parameter.value == nil else { return nil }
                bit = 1
                agreed.serverNoContextTakeover = true
            } else if named("client_no_context_takeover") {
                guard parameter.value == nil else { return nil }
                bit = 2
                agreed.clientNoContextTakeover = true
            } else if named("server_max_window_bits") {
                guard let span = parameter.value, let bits = windowBits(value, span) else { return nil }
                bit = 4
                agreed.serverMaxWindowBits = bits
            } else if named("client_max_window_bits") {
                bit = 8
                if let span = parameter.value {
                    guard let bits = windowBits(value, span) else { return nil }
                    agreed.clientMaxWindowBits = bits
                }
            } else {
                return nil  // unknown parameter (§7)
            }
            guard seen & bit == 0 else { return nil }  // repeated parameter (§7)
            seen |= bit
        }
        return agreed
    }

    /// §7.1.2: "a decimal integer value without leading zeroes between 8 to
    /// 15, inclusive".
    static func windowBits(_ value: UnsafeRawBufferPointer, _ span: ByteSpan) -> Int? {
        func digit(_ i: Int) -> Int? {
            let c = value[i]
            return c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") ? Int(c - UInt8(ascii: "0")) : nil
        }
        switch span.count {
        case 1:
            guard let d = digit(span.start), d >= 8 else { return nil }
            return d
        case 2:
            guard value[span.start] == UInt8(ascii: "1"), let d = digit(span.start + 1), d <= 5 else { return nil }
            return 10 + d
        default:
            return nil
        }
    }
}
