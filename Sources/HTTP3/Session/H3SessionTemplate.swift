// What every HTTP/3 session of a server shares: the limits (clamped), the
// SETTINGS they make (RFC 9114 §7.2.4), the frame readers' bounds and the
// 431 response HEADERS frame. Built once (per QUIC service, that is per
// worker thread) and referenced by each `H3Session`, so an idle connection
// does not carry its own copy of them. Immutable once built.

import Core
import HTTPFields

public final class H3SessionTemplate {
    let limits: H3Limits
    /// The SETTINGS every session sends.
    let localSettings: H3Settings
    let frameLimits: H3FrameReader.Limits
    /// The WebTransport registries' share, when WebTransport is on.
    public let webTransport: WebTransportTemplate?
    /// A 431 response HEADERS frame (`H3Event.headTooLarge` points into it).
    let headTooLargeResponse: UnsafeMutableRawBufferPointer

    public init(limits: H3Limits) {
        let l = limits.clamped
        self.limits = l
        var settings = H3Settings(qpackMaxTableCapacity: UInt64(l.qpackMaxTableCapacity),
                                  qpackBlockedStreams: UInt64(l.qpackBlockedStreams),
                                  maxFieldSectionSize: UInt64(l.maxFieldSectionSize),
                                  enableConnectProtocol: l.enableConnectProtocol)
        if let wt = l.webTransport { settings.webTransport = wt.advertised }
        localSettings = settings
        webTransport = l.webTransport.map { WebTransportTemplate(limits: $0) }
        frameLimits = H3FrameReader.Limits(maxHeadersLength: l.maxHeadersFrameBytes, maxSettingsLength: l.maxSettingsFrameBytes,
                                           rejectsWebTransportStreamFrame: l.webTransport != nil)

        var response: [UInt8] = []
        var section: [UInt8] = []
        let encoder = QPACKEncoder()
        encoder.beginSection(into: &section)
        H3Session.encodeStatus(431, encoder, into: &section)
        section.withUnsafeBytes { H3FrameEncoder.appendHeaders($0, to: &response) }
        headTooLargeResponse = UnsafeMutableRawBufferPointer.allocate(byteCount: response.count, alignment: 1)
        headTooLargeResponse.copyBytes(from: response)
    }

    deinit {
        headTooLargeResponse.deallocate()
    }
}
