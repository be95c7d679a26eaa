// Required Insert Count encoding (RFC 9204 §4.5.1.1).
//
// The count is sent modulo 2 * MaxEntries (MaxEntries = floor(capacity / 32),
// the most entries the table can hold), plus one so that 0 means "no dynamic
// references". The decoder recovers it from its own insert count: the true
// value lies within MaxEntries of TotalNumberOfInserts.

public enum QPACKRequiredInsertCount {
    public static func encode(_ ric: Int, maxTableCapacity: Int) -> Int {
        guard ric > 0 else { return 0 }
        return ric % (2 * (maxTableCapacity / 32)) + 1
    }

    /// The §4.5.1.1 algorithm, verbatim.
    public static func decode(_ encoded: Int, maxTableCapacity: Int, totalInserts: Int) throws(H3Error) -> Int {
        let maxEntries = maxTableCapacity / 32
        let fullRange = 2 * maxEntries
        if encoded == 0 { return 0 }
        guard encoded <= fullRange else { throw .qpackBadRequiredInsertCount }
        let maxValue = totalInserts + maxEntries
        let maxWrapped = (maxValue / fullRange) * fullRange
        var ric = maxWrapped + encoded - 1
        if ric > maxValue {
            guard ric > fullRange else { throw .qpackBadRequiredInsertCount }
            ric -= fullRange
        }
        guard ric != 0 else { throw .qpackBadRequiredInsertCount }
        return ric
    }
}
