// Request message validation for HTTP/2 (RFC 9113 §8.1–§8.3; RFC 8441 §4).
//
// The rules are HTTPFields' `RequestFieldValidator`, shared with HTTP/3; this
// file gives each broken rule its HTTP/2 error: §8.1.1 "Malformed requests or
// responses that are detected MUST be treated as a stream error of type
// PROTOCOL_ERROR". The constants keep the names and reasons the connection
// and its tests have always used.

import Core

extension H2Error {
    /// The stream error for a malformed request (§8.1.1).
    init(_ e: RequestFieldError) { self.init(code: .protocolError, reason: e.reason) }

    public static let pseudoAfterRegular = H2Error(RequestFieldError.pseudoAfterRegular)
    public static let pseudoInTrailers = H2Error(RequestFieldError.pseudoInTrailers)
    public static let unknownPseudo = H2Error(RequestFieldError.unknownPseudo)
    public static let duplicatePseudo = H2Error(RequestFieldError.duplicatePseudo)
    public static let invalidFieldName = H2Error(RequestFieldError.invalidFieldName)
    public static let invalidFieldValue = H2Error(RequestFieldError.invalidFieldValue)
    public static let connectionSpecificField = H2Error(RequestFieldError.connectionSpecificField)
    public static let teNotTrailers = H2Error(RequestFieldError.teNotTrailers)
    public static let invalidContentLength = H2Error(RequestFieldError.invalidContentLength)
    public static let contentLengthList = H2Error(RequestFieldError.contentLengthList)
    public static let repeatedContentLength = H2Error(RequestFieldError.repeatedContentLength)
    public static let duplicateHost = H2Error(RequestFieldError.duplicateHost)
    public static let missingMethod = H2Error(RequestFieldError.missingMethod)
    public static let invalidMethod = H2Error(RequestFieldError.invalidMethod)
    public static let missingSchemeOrPath = H2Error(RequestFieldError.missingSchemeOrPath)
    public static let invalidScheme = H2Error(RequestFieldError.invalidScheme)
    public static let invalidPath = H2Error(RequestFieldError.invalidPath)
    public static let invalidAuthority = H2Error(RequestFieldError.invalidAuthority)
    public static let connectWithSchemeOrPath = H2Error(RequestFieldError.connectWithSchemeOrPath)
    public static let connectWithoutAuthority = H2Error(RequestFieldError.connectWithoutAuthority)
    public static let missingAuthority = H2Error(RequestFieldError.missingAuthority)
    public static let protocolNotEnabled = H2Error(RequestFieldError.protocolNotEnabled)
    public static let protocolWithoutConnect = H2Error(RequestFieldError.protocolWithoutConnect)
    public static let invalidProtocol = H2Error(RequestFieldError.invalidProtocol)
    public static let hostMismatch = H2Error(RequestFieldError.hostMismatch)
    public static let contentLengthWithEndStream = H2Error(code: .protocolError, reason: "non-zero content-length on a request without body")
}

/// The shared validator with HTTP/2 errors.
struct RequestValidator {
    private var shared: RequestFieldValidator
    var allowProtocol: Bool { shared.allowProtocol }

    init(allowProtocol: Bool) { shared = RequestFieldValidator(allowProtocol: allowProtocol) }

    /// Validates `list` as a request head (`trailers == false`) or a trailer
    /// section, and copies it into a head.
    mutating func build(_ list: HeaderList, trailers: Bool) throws(H2Error) -> H2RequestHead {
        do { return try shared.build(list, trailers: trailers) } catch { throw H2Error(error) }
    }

    /// The same into `head`, whose arrays are reused (see
    /// `H2Connection.lentHead`).
    mutating func build(_ list: HeaderList, trailers: Bool, into head: inout H2RequestHead) throws(H2Error) {
        do { try shared.build(list, trailers: trailers, into: &head) } catch { throw H2Error(error) }
    }
}
