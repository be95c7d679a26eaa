/* The log-linear latency histogram (histogram.h): bucket = (exponent, next HIST_SUB_BITS - 1 bits of mantissa). */
#include "histogram.h"

#define SUB_COUNT (1u << (HIST_SUB_BITS - 1))

static unsigned bucket_of(uint64_t v) {
    if (v < (1u << HIST_SUB_BITS)) {
        return (unsigned)v; /* exact: 1 µs resolution up to 1.024 ms */
    }
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);    /* >= HIST_SUB_BITS */
    unsigned exp = msb - HIST_SUB_BITS + 1;               /* 1, 2, ... */
    if (exp > HIST_MAX_EXP) {
        return HIST_BUCKETS - 1;
    }
    unsigned sub = (unsigned)(v >> (msb - (HIST_SUB_BITS - 1))) & (SUB_COUNT - 1);
    return (1u << HIST_SUB_BITS) + (exp - 1) * SUB_COUNT + sub;
}

/* The largest value that falls in bucket b (b < HIST_BUCKETS - 1). */
static uint64_t bucket_top(unsigned b) {
    if (b < (1u << HIST_SUB_BITS)) {
        return b;
    }
    unsigned exp = (b - (1u << HIST_SUB_BITS)) / SUB_COUNT + 1, sub = (b - (1u << HIST_SUB_BITS)) % SUB_COUNT;
    unsigned shift = exp; /* msb = HIST_SUB_BITS - 1 + exp; a bucket spans 2^(msb - (HIST_SUB_BITS - 1)) */
    uint64_t base = (uint64_t)(SUB_COUNT | sub) << shift;
    return base + (((uint64_t)1 << shift) - 1);
}

void histogram_record(struct histogram *h, uint64_t value) {
    h->counts[bucket_of(value)]++;
    h->total++;
    if (value > h->max) {
        h->max = value;
    }
}

uint64_t histogram_quantile(const struct histogram *h, double q) {
    if (h->total == 0) {
        return 0;
    }
    uint64_t rank = (uint64_t)(q * (double)h->total + 0.999999);
    if (rank < 1) {
        rank = 1;
    }
    uint64_t seen = 0;
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t top = b == HIST_BUCKETS - 1 ? UINT64_MAX : bucket_top(b); /* the last one is open-ended */
            return top < h->max ? top : h->max;
        }
    }
    return h->max;
}
