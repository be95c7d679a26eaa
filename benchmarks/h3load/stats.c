/* Log-linear latency histogram (see h3load.h): bucket = (exponent, top HIST_SUB_BITS bits of the mantissa). */
#include "h3load.h"

static unsigned bucket_of(uint64_t v) {
    if (v < (1u << HIST_SUB_BITS)) {
        return (unsigned)v; /* exact below 2^HIST_SUB_BITS */
    }
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned exp = msb - HIST_SUB_BITS + 1;
    if (exp > HIST_MAX_EXP) {
        return HIST_BUCKETS - 1;
    }
    unsigned sub = (unsigned)(v >> (exp - 1)) & ((1u << HIST_SUB_BITS) - 1);
    return (exp << HIST_SUB_BITS) | sub;
}

/* The largest value that falls in bucket b. */
static uint64_t bucket_top(unsigned b) {
    unsigned exp = b >> HIST_SUB_BITS, sub = b & ((1u << HIST_SUB_BITS) - 1);
    if (exp == 0) {
        return sub;
    }
    uint64_t base = (uint64_t)((1u << HIST_SUB_BITS) | sub) << (exp - 1);
    return base + (((uint64_t)1 << (exp - 1)) - 1);
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
