/* Checks of the latency histogram (../histogram/histogram.c), run by tests/e2e/test_h3load.py: prints "ok" and exits 0, or names
 * the first failed check and exits 1. Build: cc -O2 -I. stats_test.c ../histogram/histogram.c $(pkg-config --cflags ...) */
#include <stdio.h>
#include <string.h>

#include "h3load.h"

struct load g; /* histogram.c needs none of it; h3load.h declares it */

static int failed(const char *what, unsigned long long value, unsigned long long got) {
    printf("FAIL %s: value %llu, got %llu\n", what, value, got);
    return 1;
}

int main(void) {
    static struct histogram h;
    /* One sample: every quantile is that sample (the bucket's top is clipped to the maximum seen). */
    for (uint64_t v = 0; v < ((uint64_t)1 << 32); v += 1 + v / 50) {
        memset(&h, 0, sizeof(h));
        histogram_record(&h, v);
        if (histogram_quantile(&h, 0.5) != v || histogram_quantile(&h, 1.0) != v) {
            return failed("single sample", v, histogram_quantile(&h, 0.5));
        }
    }
    /* Below 2^HIST_SUB_BITS every value has its own bucket: quantiles are exact. */
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1; v <= 50; v++) {
        histogram_record(&h, v);
    }
    if (histogram_quantile(&h, 0.5) != 25 || histogram_quantile(&h, 0.9) != 45 || histogram_quantile(&h, 0.02) != 1) {
        return failed("exact small values", 25, histogram_quantile(&h, 0.5));
    }
    /* 1..100000 µs uniformly: each quantile within one bucket (relative 2^-(HIST_SUB_BITS - 1)) above the true one. */
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1; v <= 100000; v++) {
        histogram_record(&h, v);
    }
    const double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        uint64_t truth = (uint64_t)(qs[i] * 100000);
        uint64_t got = histogram_quantile(&h, qs[i]);
        if (got < truth || (double)got > (double)truth * (1.0 + 1.0 / (1 << (HIST_SUB_BITS - 1)))) {
            return failed("uniform quantile", truth, got);
        }
    }
    if (h.max != 100000 || h.total != 100000 || histogram_quantile(&h, 1.0) != 100000) {
        return failed("maximum", 100000, h.max);
    }
    /* Past 2^HIST_MAX_EXP µs values share the last bucket; the maximum stays exact. */
    memset(&h, 0, sizeof(h));
    histogram_record(&h, (uint64_t)1 << 50);
    histogram_record(&h, ((uint64_t)1 << 50) + 7);
    if (h.counts[HIST_BUCKETS - 1] != 2 || histogram_quantile(&h, 1.0) != ((uint64_t)1 << 50) + 7) {
        return failed("overflow bucket", 2, h.counts[HIST_BUCKETS - 1]);
    }
    /* Empty: zero. */
    memset(&h, 0, sizeof(h));
    if (histogram_quantile(&h, 0.5) != 0) {
        return failed("empty", 0, histogram_quantile(&h, 0.5));
    }
    puts("ok");
    return 0;
}
