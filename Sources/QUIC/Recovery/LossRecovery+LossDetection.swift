// Declaring packets lost (RFC 9002 §6.1, A.10) and reacting to it (§7.3.2,
// §7.6, B.8).

import Core

/// What one loss-detection pass found, for the congestion controller.
struct LossDetectionResult {
    /// The send time of the newest in-flight packet declared lost (B.8 sent_time_of_last_loss).
    var latestLostInFlightSentTime: Instant?
    /// §7.6.2: two ack-eliciting packets lost, further apart than the
    /// persistent congestion duration, with nothing acknowledged between them.
    var persistentCongestion = false
}

extension LossRecovery {
    /// §A.10 DetectAndRemoveLostPackets: every outstanding packet at or below
    /// the largest acknowledged is lost if kPacketThreshold packets newer than
    /// it are acknowledged (§6.1.1) or it was sent more than the time threshold
    /// ago (§6.1.2); otherwise the space's loss time is set for when it will be.
    mutating func detectAndRemoveLostPackets(space: PacketNumberSpace, now: Instant,
                                             lost: (UInt64) -> Void) -> LossDetectionResult {
        let s = space.rawValue
        var result = LossDetectionResult()
        ledgers[s].lossTime = nil
        guard let largestAcked = ledgers[s].largestAcked else { return result }
        let lossDelay = rtt.lossDelay
        let lostSendTime = now.nanoseconds - lossDelay
        // §7.6.1: "(smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay) *
        // kPersistentCongestionThreshold", max_ack_delay whatever the space.
        let persistentDuration = rtt.probeTimeout(maxAckDelay: maxAckDelay) * Self.persistentCongestionThreshold
        // The oldest packet of the current run of losses with nothing acknowledged between.
        var runStart: Instant?

        var position = 0
        while position < ledgers[s].count, ledgers[s][position].packetNumber <= largestAcked {
            let packet = ledgers[s][position]
            switch packet.state {
            case .acknowledged:
                runStart = nil
            case .lost:
                break
            case .outstanding:
                if packet.timeSent.nanoseconds <= lostSendTime
                    || largestAcked >= packet.packetNumber + Self.packetThreshold {
                    _ = ledgers[s].settle(at: position, as: .lost)
                    lost(packet.packetNumber)
                    if packet.inFlight && isOnCurrentPath(packet) {
                        result.latestLostInFlightSentTime = max(result.latestLostInFlightSentTime ?? packet.timeSent,
                                                                packet.timeSent)
                    }
                    // §7.6.2: only ack-eliciting packets sent after the first RTT sample.
                    if packet.ackEliciting, let first = firstRTTSampleTime, packet.timeSent > first {
                        if let start = runStart {
                            if packet.timeSent.nanoseconds - start.nanoseconds > persistentDuration {
                                result.persistentCongestion = true
                            }
                        } else {
                            runStart = packet.timeSent
                        }
                    }
                } else {
                    let when = Instant(nanoseconds: packet.timeSent.nanoseconds + lossDelay)
                    ledgers[s].lossTime = min(ledgers[s].lossTime ?? when, when)
                }
            }
            position += 1
        }
        return result
    }

    /// §B.8 OnPacketsLost, after bytes in flight were already reduced by the ledger.
    mutating func onPacketsLost(_ result: LossDetectionResult, now: Instant) {
        if let sentTime = result.latestLostInFlightSentTime {
            controller.onCongestionEvent(sentTime: sentTime, now: now)
        }
        if result.persistentCongestion {
            controller.onPersistentCongestion()
            persistentCongestionCount += 1
            rtt.resetMinRTTAfterPersistentCongestion()
        }
    }
}
