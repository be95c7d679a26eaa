// The client's unidirectional streams (RFC 9114 §6.2; RFC 9204 §4.2).
//
// Each starts with its stream type (`H3UniStreamPreamble`, split anywhere);
// `H3PeerStreams` then admits it: one control, QPACK encoder and QPACK decoder
// stream each (a second is H3_STREAM_CREATION_ERROR), no push stream from a
// client (H3_STREAM_CREATION_ERROR), unknown and reserved types ignored —
// "MUST NOT consider unknown stream types to be a connection error of any
// kind" (§6.2.3); we ask the client to stop (STOP_SENDING with
// H3_STREAM_CREATION_ERROR, §6.2: "the recipient SHOULD use the
// H3_STREAM_CREATION_ERROR error code") and drop what still arrives. A
// stream closed before its type arrived is nothing ("A receiver MUST tolerate
// unidirectional streams being closed or reset prior to the reception of the
// unidirectional stream header"); a critical stream closed at any point is
// H3_CLOSED_CRITICAL_STREAM.
//
//   * control: `H3ControlStream` (SETTINGS first and once, GOAWAY only
//     decreasing, MAX_PUSH_ID only growing and otherwise ignored: we never
//     push, CANCEL_PUSH refused);
//   * QPACK encoder: the decoder's `feedEncoderStream`; the streams it
//     releases are decoded and reported from here on;
//   * QPACK decoder: our encoder never inserts, so only Stream Cancellation
//     is valid there (`QPACKDecoderStreamReader`).

import Core

extension H3Session {
    func receiveUni(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) -> (event: H3Event?, consumed: Int) {
        // The client's control and QPACK streams, their table and what they
        // carry (its SETTINGS, dynamic table entries) live as long as the
        // connection (AllocationZone).
        let zone = AllocationZone.connection.enter()
        defer { AllocationZone.restore(zone) }
        return readUni(id, bytes, fin: fin)
    }

    private func readUni(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) -> (event: H3Event?, consumed: Int) {
        var i = 0
        var stream = peerUniStreams[id] ?? .preamble(H3UniStreamPreamble())
        if case .preamble(var preamble) = stream {
            let (type, n) = preamble.read(bytes)
            i = n
            guard let type else {
                peerUniStreams[id] = fin ? nil : .preamble(preamble)
                return (nil, i)
            }
            if type == WebTransportStreamHeader.uniStreamType, limits.webTransport != nil {
                peerUniStreams[id] = .webTransport
                return (.webTransportStream(streamID: id, bidirectional: false), i)
            }
            let role: H3PeerStreamRole
            do { role = try peerStreams.opened(id, type: type) } catch { return (fail(error), bytes.count) }
            switch role {
            case .control: stream = .control
            case .qpackEncoder: stream = .qpackEncoder
            case .qpackDecoder: stream = .qpackDecoder
            case .ignored:
                peerUniStreams[id] = fin ? nil : .ignored
                return (.unknownStreamIgnored(streamID: id, code: .streamCreationError), bytes.count)
            }
            peerUniStreams[id] = stream
        }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[i...])
        do throws(H3Error) {
            switch stream {
            case .preamble:
                preconditionFailure("the stream type was read above")
            case .webTransport:
                // The registry's to read; bytes still offered here are
                // dropped, as for a request stream handed over (closed).
                if fin { peerUniStreams[id] = nil }
                return (nil, bytes.count)
            case .ignored:
                if fin { peerUniStreams[id] = nil }
                return (nil, bytes.count)
            case .control:
                var at = 0
                while at < rest.count {
                    let (event, n) = try controlStream.read(UnsafeRawBufferPointer(rebasing: rest[at...]))
                    at += n
                    switch event {
                    case nil, .maxPushID:
                        // §7.2.7: MAX_PUSH_ID only bounds pushes, and we never push.
                        continue
                    case .settings(let s):
                        peerSettings = s
                        return (.settings(s), i + at)
                    case .goaway(let pushID):
                        return (.goAway(pushID: pushID), i + at)
                    }
                }
            case .qpackEncoder:
                try decoder.feedEncoderStream(rest)
                unblocked.append(contentsOf: decoder.takeUnblockedStreams())
            case .qpackDecoder:
                // Stream Cancellations need nothing from an encoder that
                // holds no references.
                _ = try decoderStreamReader.read(rest)
            }
            if fin { try peerStreams.closed(id) }
        } catch {
            return (fail(error), bytes.count)
        }
        return (nextUnblocked(), bytes.count)
    }
}
