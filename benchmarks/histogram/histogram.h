/* The latency histogram of the benchmark load generators (openloop, h3load): one implementation, compiled into
 * both by their build.sh. */
#ifndef BENCHMARK_HISTOGRAM_H
#define BENCHMARK_HISTOGRAM_H

#include <stdint.h>

/* Log-linear histogram of microseconds: every value below 2^HIST_SUB_BITS (1024 µs) has its own bucket; above,
 * each power of two is cut into 2^(HIST_SUB_BITS - 1) equal buckets, so a quantile is at most 2^-(HIST_SUB_BITS
 * - 1) (0.2%) above the true one. Values from 2^(HIST_MAX_EXP + HIST_SUB_BITS) µs (about 19 hours) on share one
 * last bucket; the maximum is kept exactly. Fixed size (216 KiB): recording never allocates. */
#define HIST_SUB_BITS 10
#define HIST_MAX_EXP 26
#define HIST_BUCKETS ((1u << HIST_SUB_BITS) + HIST_MAX_EXP * (1u << (HIST_SUB_BITS - 1)) + 1)

struct histogram {
    uint64_t counts[HIST_BUCKETS];
    uint64_t total;
    uint64_t max;
};

void histogram_record(struct histogram *h, uint64_t value);
/* The smallest bucket top at or above the q-quantile's rank (clipped to the maximum); 0 when empty. */
uint64_t histogram_quantile(const struct histogram *h, double q);

#endif
