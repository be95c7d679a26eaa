// Compatible version negotiation from the server's side (RFC 9368 §2.2,
// RFC 9369 §4): a client whose first Initial uses one version may list
// others it speaks in its version_information transport parameter; the
// server may move the connection to one of them without a round trip.
//
// The version is settled once the whole ClientHello is in (it may span
// several Initials; until then our Initials, ACKs only, use the original
// version), before TLS reads it. The order is the client's, fixed: the first
// of its Available Versions that we speak and that is compatible with its
// Chosen Version (the version of its Initials) is chosen, so a client
// listing [v2, v1] moves to v2 and one listing [v1, v2] stays on v1. The
// client knows what each version costs it; we have no reason to prefer one
// (aioquic's server does the same). Switching means Initial keys of the
// new version for everything we send (RFC 9369 §4: "The server MUST send
// all CRYPTO frames using the negotiated version"), the original version's
// Initial read keys kept until a Handshake packet is processed, Handshake
// and 1-RTT keys with the new version's labels, and our version_information
// naming the new version as chosen. The client's version_information is
// validated when TLS hands it over (RFC 9368 §4).

import Core

extension QUICConnection {
    enum HelloVersionInformation {
        case needMoreBytes
        /// The whole ClientHello was seen; its version_information, if any
        /// decodable one (TLS and the transport parameter checks refuse the
        /// rest).
        case whole(VersionInformation?)
    }

    /// What the ClientHello at the start of the Initial CRYPTO stream says.
    func clientVersionInformation(in bytes: UnsafeRawBufferPointer) -> HelloVersionInformation {
        switch handshake.peekHelloTransportParameters(bytes) {
        case .needMoreBytes:
            return .needMoreBytes
        case .notFound:
            return .whole(nil)
        case .transportParameters(let range):
            let body = UnsafeRawBufferPointer(rebasing: bytes[range])
            return .whole((try? TransportParameters.decode(body, sentBy: .client))?.versionInformation)
        }
    }

    /// Settles the version (once), switching when the client offers a
    /// version we prefer to the one it started with.
    func negotiateVersion(_ information: VersionInformation?) {
        guard !versionDecided else { return }
        versionDecided = true
        // Our parameters are encoded again only by a switch, decided now:
        // the box goes with the first flight, not a round trip later
        // (every handshake under way at once holds one, issue 15).
        defer { localParametersBox = nil }
        guard let information, information.chosenVersion == version else { return }
        for candidate in information.availableVersions {
            guard candidate != version else { return }
            guard configuration.supportedVersions.contains(candidate), isCompatible(version, candidate) else { continue }
            switchVersion(to: candidate)
            return
        }
    }

    /// RFC 9369 §4: versions 1 and 2 are compatible with each other.
    private func isCompatible(_ a: QUICVersion, _ b: QUICVersion) -> Bool {
        (a == .v1 || a == .v2) && (b == .v1 || b == .v2)
    }

    private func switchVersion(to negotiated: QUICVersion) {
        let zone = AllocationZone.handshake.enter()
        let keys = InitialKeys.derive(destinationID: initialDestinationID, version: negotiated)
        AllocationZone.restore(zone)
        originalInitialReadKeys = spaces[0].readKeys
        spaces[0].readKeys = keys.client
        spaces[0].writeKeys = keys.server
        version = negotiated
        // The client's hello was just read: the version is being decided.
        guard let local = localParametersBox else { preconditionFailure("version switch after the version was decided") }
        local.value.versionInformation = VersionInformation(chosenVersion: negotiated,
                                                            availableVersions: configuration.supportedVersions)
        var encoded = [UInt8](repeating: 0, count: local.value.encodedSize())
        encoded.withUnsafeMutableBytes { _ = local.value.encode(into: $0) }
        handshake.replaceLocalTransportParameters(encoded)
    }

    /// RFC 9368 §4: the client's Chosen Version must be among its Available
    /// Versions (else a parsing failure: TRANSPORT_PARAMETER_ERROR), none of
    /// them 0, and equal to the version of its first Initial
    /// (VERSION_NEGOTIATION_ERROR: a downgrade or a confused client).
    func validateVersionInformation(_ information: VersionInformation?) throws(QUICError) {
        guard let information else { return }
        guard information.availableVersions.contains(information.chosenVersion),
              !information.availableVersions.contains(.negotiation) else { throw .versionInformationMalformed }
        guard information.chosenVersion == originalVersion else { throw .chosenVersionMismatch }
    }
}

extension QUICError {
    public static let versionInformationMalformed = QUICError(code: .transportParameterError,
                                                              reason: "version_information: Chosen Version not among Available Versions, or a 0")
    public static let chosenVersionMismatch = QUICError(code: .versionNegotiationError,
                                                        reason: "version_information: Chosen Version is not the version of the client's Initial")
}
