// Request message validation (RFC 9113 §8.1–§8.3; RFC 8441 §4; RFC 9114
// §4.1.2, §4.2, §4.3; RFC 9220 §3), shared by HTTP/2 and HTTP/3.
//
// Turns a decoded header list into a `RequestHead`, or names the rule it
// broke. Every failure here makes the request malformed: RFC 9113 §8.1.1
// "Malformed requests or responses that are detected MUST be treated as a
// stream error of type PROTOCOL_ERROR"; RFC 9114 §4.1.2 "Malformed requests
// or responses that are detected MUST be treated as a stream error of type
// H3_MESSAGE_ERROR" — the connection resets the stream and the application
// never sees the request (DESIGN principle 7). The rules of the two versions
// are the same (RFC 9114 §4.2 forbids the same connection-specific fields and
// upper-case names, §4.3.1 has the same pseudo-header fields; section numbers
// below are RFC 9113's).
//
// Rules, in the order a field meets them:
//   * pseudo-header fields come first (§8.3: "All pseudo-header fields MUST
//     appear in a field block before all regular field lines"), each at most
//     once, only the request ones (§8.3.1; `:status` or an unknown one is
//     malformed), `:protocol` only with SETTINGS_ENABLE_CONNECT_PROTOCOL
//     (RFC 8441 §4); trailers carry none (§8.1);
//   * names are lower-case tokens, values field-content (FieldSyntax);
//   * connection-specific fields (§8.2.2: connection, keep-alive,
//     proxy-connection, transfer-encoding, upgrade) are malformed, and `te`
//     may only say "trailers";
//   * content-length is one field holding one 1*DIGIT value (RFC 9110
//     §8.6). §8.6 lets a recipient of a list such as "5, 5" (or of the same
//     value in two fields) reject it or replace it by the one value; we
//     reject it like HTTP/1.1 does (DESIGN principle 7), so the application
//     only ever sees one decimal;
//   * cookie crumbs are joined with "; " (§8.2.3), in order;
//   * then the pseudo-header set: :method always; CONNECT (§8.5) has
//     :authority with a port and neither :scheme nor :path; extended CONNECT
//     has all four plus :protocol; every other method has :scheme and a
//     non-empty :path ("/..." or "*" for OPTIONS);
//   * :authority and Host, when both present, name the same authority (§8.3.1
//     "A server SHOULD treat a request as malformed if it contains a Host
//     header field that identifies an entity that differs from the entity in
//     the :authority pseudo-header field").

import Core

/// The request rule a field section broke. Every case makes the message
/// malformed: a stream error PROTOCOL_ERROR in HTTP/2 (RFC 9113 §8.1.1),
/// H3_MESSAGE_ERROR in HTTP/3 (RFC 9114 §4.1.2); each protocol maps it once.
public enum RequestFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    case pseudoAfterRegular
    case pseudoInTrailers
    case unknownPseudo
    case duplicatePseudo
    case invalidFieldName
    case invalidFieldValue
    case connectionSpecificField
    case teNotTrailers
    case invalidContentLength
    case contentLengthList
    case repeatedContentLength
    case duplicateHost
    case missingMethod
    case invalidMethod
    case missingSchemeOrPath
    case invalidScheme
    case invalidPath
    case invalidAuthority
    case connectWithSchemeOrPath
    case connectWithoutAuthority
    case missingAuthority
    case protocolNotEnabled
    case protocolWithoutConnect
    case invalidProtocol
    case hostMismatch

    /// A fixed description (also fit for GOAWAY debug data).
    public var reason: StaticString {
        switch self {
        case .pseudoAfterRegular: "pseudo-header field after a regular field"
        case .pseudoInTrailers: "pseudo-header field in trailers"
        case .unknownPseudo: "unknown or response pseudo-header field"
        case .duplicatePseudo: "repeated pseudo-header field"
        case .invalidFieldName: "field name not a lower-case token"
        case .invalidFieldValue: "invalid octet or surrounding whitespace in a field value"
        case .connectionSpecificField: "connection-specific field"
        case .teNotTrailers: "te other than \"trailers\""
        case .invalidContentLength: "content-length not 1*DIGIT"
        case .contentLengthList: "content-length with a list of values"
        case .repeatedContentLength: "repeated content-length field"
        case .duplicateHost: "repeated host field"
        case .missingMethod: "missing :method"
        case .invalidMethod: ":method not a token"
        case .missingSchemeOrPath: "missing :scheme or :path"
        case .invalidScheme: "invalid :scheme"
        case .invalidPath: "empty or invalid :path"
        case .invalidAuthority: "invalid :authority or host"
        case .connectWithSchemeOrPath: "CONNECT with :scheme or :path"
        case .connectWithoutAuthority: "CONNECT without :authority"
        case .missingAuthority: "http(s) request without :authority or host"
        case .protocolNotEnabled: ":protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL"
        case .protocolWithoutConnect: ":protocol on a method other than CONNECT"
        case .invalidProtocol: ":protocol not a token"
        case .hostMismatch: "host differs from :authority"
        }
    }

    public var description: String { "\(reason)" }
}

/// Builds heads from decoded lists; holds scratch space reused per request.
public struct RequestFieldValidator: Sendable {
    private var cookieCrumbs: [ByteSpan] = []
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL was sent (RFC 8441 §3, RFC 9220 §3).
    public let allowProtocol: Bool

    public init(allowProtocol: Bool) {
        self.allowProtocol = allowProtocol
        cookieCrumbs.reserveCapacity(8)
    }

    /// Validates `list` as a request head (`trailers == false`) or a trailer
    /// section, and copies it into a head.
    public mutating func build(_ list: HeaderList, trailers: Bool) throws(RequestFieldError) -> RequestHead {
        var head = RequestHead()
        try build(list, trailers: trailers, into: &head)
        return head
    }

    /// `build(_:trailers:)` into a head the caller reuses: its arrays keep
    /// their capacity, so once they are large enough, and if nobody else
    /// still holds them (copy-on-write), building allocates nothing. On a
    /// throw `head` holds a partial section; it is reset on the next call.
    public mutating func build(_ list: HeaderList, trailers: Bool,
                               into head: inout RequestHead) throws(RequestFieldError) {
        cookieCrumbs.removeAll(keepingCapacity: true)
        head.reset()
        head.fields.reserveCapacity(list.count)
        var method: ByteSpan?, scheme: ByteSpan?, authority: ByteSpan?, path: ByteSpan?, proto: ByteSpan?
        var host: ByteSpan?
        var cookieIndex: Int?
        let result: RequestFieldError? = list.bytes.withUnsafeBytes { all -> RequestFieldError? in
            @inline(__always) func bytes(_ s: ByteSpan) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: all[s.start ..< s.end])
            }
            var sawRegular = false
            // Indices and `isEmpty`/`[0]`, not `for f in list.fields` and
            // `.first`: an unoptimised build runs those through the generic
            // Collection code, which mallocs a coroutine frame per element
            // read (16 mallocs a request before; the allocation tests count).
            for i in list.fields.indices {
                let f = list.fields[i]
                let name = bytes(f.name)
                let value = bytes(f.value)
                if !name.isEmpty && name[0] == 0x3a {
                    if trailers { return .pseudoInTrailers }
                    if sawRegular { return .pseudoAfterRegular }
                    var target: ByteSpan?
                    switch name.count {
                    case 5 where FieldSyntax.equals(name, ":path"): target = path; path = f.value
                    case 7 where FieldSyntax.equals(name, ":method"): target = method; method = f.value
                    case 7 where FieldSyntax.equals(name, ":scheme"): target = scheme; scheme = f.value
                    case 10 where FieldSyntax.equals(name, ":authority"): target = authority; authority = f.value
                    case 9 where FieldSyntax.equals(name, ":protocol"): target = proto; proto = f.value
                    default: return .unknownPseudo
                    }
                    if target != nil { return .duplicatePseudo }
                    continue
                }
                sawRegular = true
                guard FieldSyntax.isFieldName(name) else { return .invalidFieldName }
                guard FieldSyntax.isFieldValue(value) else { return .invalidFieldValue }
                switch name.count {
                case 2 where FieldSyntax.equals(name, "te"):
                    guard FieldSyntax.equalsIgnoringCase(value, "trailers") else { return .teNotTrailers }
                case 4 where FieldSyntax.equals(name, "host"):
                    guard host == nil else { return .duplicateHost }
                    host = f.value
                case 6 where FieldSyntax.equals(name, "cookie"):
                    cookieCrumbs.append(f.value)
                    if cookieIndex != nil { continue }
                    cookieIndex = head.fields.count
                case 6 where !trailers && FieldSyntax.equals(name, "expect"):
                    // The expectation token is case-insensitive (RFC 9110 §10.1.1).
                    if FieldSyntax.equalsIgnoringCase(value, "100-continue") { head.expectsContinue = true }
                case 7 where FieldSyntax.equals(name, "upgrade"),
                     10 where FieldSyntax.equals(name, "connection") || FieldSyntax.equals(name, "keep-alive"),
                     16 where FieldSyntax.equals(name, "proxy-connection"),
                     17 where FieldSyntax.equals(name, "transfer-encoding"):
                    return .connectionSpecificField
                case 14 where !trailers && FieldSyntax.equals(name, "content-length"):
                    guard head.contentLength == nil else { return .repeatedContentLength }
                    guard let n = FieldSyntax.contentLength(value) else {
                        return value.contains(UInt8(ascii: ",")) ? .contentLengthList : .invalidContentLength
                    }
                    head.contentLength = n
                default:
                    break
                }
                head.fields.append(RequestField(name: f.name, value: f.value))
            }
            if trailers { return nil }

            guard let method else { return .missingMethod }
            guard FieldSyntax.isToken(bytes(method)) else { return .invalidMethod }
            let isConnect = FieldSyntax.equals(bytes(method), "CONNECT")
            if let proto {
                guard allowProtocol else { return .protocolNotEnabled }
                guard isConnect else { return .protocolWithoutConnect }
                guard FieldSyntax.isToken(bytes(proto)) else { return .invalidProtocol }
            }
            let plainConnect = isConnect && proto == nil
            if plainConnect {
                guard scheme == nil && path == nil else { return .connectWithSchemeOrPath }
                guard authority != nil else { return .connectWithoutAuthority }
            } else {
                guard let scheme, let path else { return .missingSchemeOrPath }
                guard FieldSyntax.isScheme(bytes(scheme)) else { return .invalidScheme }
                let options = FieldSyntax.equals(bytes(method), "OPTIONS")
                guard FieldSyntax.isPath(bytes(path), asterisk: options) else { return .invalidPath }
                if isConnect && authority == nil { return .connectWithoutAuthority }
                // §8.3.1: "http" and "https" have a mandatory authority component,
                // so such a request "MUST contain either an :authority
                // pseudo-header field or a Host header field".
                let web = FieldSyntax.equalsIgnoringCase(bytes(scheme), "http") || FieldSyntax.equalsIgnoringCase(bytes(scheme), "https")
                if web && authority == nil && host == nil { return .missingAuthority }
            }
            if let authority {
                guard FieldSyntax.isAuthority(bytes(authority), requirePort: plainConnect) else { return .invalidAuthority }
            }
            if let host {
                guard FieldSyntax.isAuthority(bytes(host), requirePort: false) else { return .invalidAuthority }
                if let authority, !FieldSyntax.equalsIgnoringCase(bytes(authority), bytes(host)) { return .hostMismatch }
            }
            return nil
        }
        if let result { throw result }
        head.method = method ?? .empty
        head.scheme = scheme ?? .empty
        head.path = path ?? .empty
        head.protocolName = proto ?? .empty
        head.authority = authority ?? host ?? .empty
        copyStorage(list, into: &head, cookieIndex: cookieIndex)
    }

    /// At most one allocation (none into a reused head large enough): the
    /// decoded bytes, then the joined cookie if there were several crumbs.
    /// Index loops and raw bytes, not `for … in` and array slices: an
    /// unoptimised build mallocs per element for those (H2ReceiveAllocationTests).
    private func copyStorage(_ list: HeaderList, into head: inout RequestHead, cookieIndex: Int?) {
        var extra = 0
        if cookieCrumbs.count > 1 {
            for i in cookieCrumbs.indices { extra += cookieCrumbs[i].count + 2 }
            extra -= 2
        }
        head.storage.reserveCapacity(list.bytes.count + extra)
        head.storage.append(contentsOf: list.bytes)
        guard let cookieIndex, cookieCrumbs.count > 1 else { return }
        let start = head.storage.count
        list.bytes.withUnsafeBytes { all in
            for i in cookieCrumbs.indices {
                if i > 0 { head.storage.append(0x3b); head.storage.append(0x20) }
                let c = cookieCrumbs[i]
                head.storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: all[c.start ..< c.end]))
            }
        }
        head.fields[cookieIndex].value = ByteSpan(offset: start, length: head.storage.count - start)
    }
}
