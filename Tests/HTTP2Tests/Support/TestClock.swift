// Time in the tests: `Instant`s counted in milliseconds from zero, so
// deadlines read as the numbers the RFC-facing limits are written in.

import Core

/// The instant `milliseconds` after the tests' zero.
func ms(_ milliseconds: Int) -> Instant { Instant(nanoseconds: Int64(milliseconds) * 1_000_000) }
