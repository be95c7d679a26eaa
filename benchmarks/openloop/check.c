/* Unit checks of openloop's histogram (../histogram/histogram.c) and response parser (http.c), run by tests/test_openloop.py:
 * prints "ok" and exits 0, or names the first failed check and exits 1. Build: build.sh --check DIRECTORY. */
#include <stdio.h>
#include <string.h>

#include "openloop.h"

static int failures;

static void expect(int ok, const char *what, unsigned long long want, unsigned long long got) {
    if (!ok && failures++ < 20) {
        printf("FAIL %s: want %llu, got %llu\n", what, want, got);
    }
}

static void check_histogram(void) {
    static struct histogram h;
    /* One sample: every quantile is that sample (a bucket's top is clipped to the maximum seen). */
    for (uint64_t v = 0; v < ((uint64_t)1 << 36); v += 1 + v / 37) {
        memset(&h, 0, sizeof(h));
        histogram_record(&h, v);
        expect(histogram_quantile(&h, 0.5) == v && histogram_quantile(&h, 1.0) == v, "single sample", v,
               histogram_quantile(&h, 0.5));
    }
    /* 1 µs resolution to 1 ms: below 1024 every value has its own bucket, so quantiles are exact. */
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1; v <= 1000; v++) {
        histogram_record(&h, v);
    }
    expect(histogram_quantile(&h, 0.5) == 500, "exact p50", 500, histogram_quantile(&h, 0.5));
    expect(histogram_quantile(&h, 0.99) == 990, "exact p99", 990, histogram_quantile(&h, 0.99));
    expect(histogram_quantile(&h, 0.999) == 999, "exact p99.9", 999, histogram_quantile(&h, 0.999));
    /* 1..10 s in µs, uniformly: each quantile at or above the true one and within 1%. */
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1; v <= 10000000; v += 1) {
        histogram_record(&h, v);
    }
    const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        uint64_t truth = (uint64_t)(qs[i] * 10000000);
        uint64_t got = histogram_quantile(&h, qs[i]);
        expect(got >= truth && (double)got <= (double)truth * 1.01, "uniform quantile within 1%", truth, got);
    }
    expect(h.max == 10000000 && histogram_quantile(&h, 1.0) == 10000000, "maximum", 10000000, h.max);
    /* Every value's bucket top is within 1% above it (and 0.2% is what the layout promises). */
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1024; v < ((uint64_t)1 << 36); v += 1 + v / 997) {
        struct histogram one = {0};
        histogram_record(&one, v);
        histogram_record(&one, UINT64_MAX / 2); /* so the quantile is the bucket top, not clipped to v */
        uint64_t top = histogram_quantile(&one, 0.5);
        expect(top >= v && (double)top <= (double)v * 1.002, "bucket top within 0.2%", v, top);
    }
    /* Past the last exponent values share the open last bucket; the maximum stays exact. */
    memset(&h, 0, sizeof(h));
    histogram_record(&h, (uint64_t)1 << 50);
    histogram_record(&h, ((uint64_t)1 << 50) + 7);
    expect(h.counts[HIST_BUCKETS - 1] == 2, "overflow bucket", 2, h.counts[HIST_BUCKETS - 1]);
    expect(histogram_quantile(&h, 1.0) == ((uint64_t)1 << 50) + 7, "overflow max", 0, histogram_quantile(&h, 1.0));
    memset(&h, 0, sizeof(h));
    expect(histogram_quantile(&h, 0.5) == 0, "empty", 0, histogram_quantile(&h, 0.5));
}

/* Delivers `text` in pieces cut at `cuts` (ascending offsets; none: whole), as openloop's read loop does: the
 * bytes the parser did not consume are offered again with the next piece. Returns the responses completed (their
 * statuses in `statuses`, Connection: close flags in `closes`), or -1 on a parse error; *left: bytes unconsumed. */
static int deliver(const char *text, size_t len, const size_t *cuts, size_t ncuts, int *statuses, int *closes,
                   size_t *left) {
    static char buf[8192];
    struct response r;
    response_reset(&r);
    size_t have = 0, given = 0;
    int done = 0;
    for (size_t piece = 0; piece <= ncuts; piece++) {
        size_t until = piece < ncuts ? cuts[piece] : len;
        memcpy(buf + have, text + given, until - given);
        have += until - given;
        given = until;
        size_t at = 0;
        for (;;) {
            size_t used = 0;
            enum feed_result got = response_feed(&r, buf + at, have - at, &used);
            at += used;
            if (got == FEED_ERROR) {
                return -1;
            }
            if (got == FEED_MORE) {
                break;
            }
            statuses[done] = r.done_status;
            closes[done] = r.done_close;
            done++;
        }
        memmove(buf, buf + at, have - at);
        have -= at;
    }
    *left = have;
    return done;
}

/* `text` must give `want` responses with these statuses whole, split once at every byte, and byte by byte. */
static void check_parse(const char *name, const char *text, int want, const int *want_status, int want_close,
                        size_t want_left) {
    size_t len = strlen(text), left;
    int statuses[16], closes[16];
    size_t cuts[4096];
    for (size_t split = 0; split <= len + 1; split++) {
        size_t ncuts = 0;
        if (split == len + 1) {
            for (size_t i = 1; i < len; i++) cuts[ncuts++] = i; /* byte by byte */
        } else if (split > 0 && split < len) {
            cuts[ncuts++] = split;
        }
        int got = deliver(text, len, cuts, ncuts, statuses, closes, &left);
        if (got != want || left != want_left) {
            printf("FAIL %s (cut at %zu): %d responses, %zu bytes left\n", name, split, got, left);
            failures++;
            return;
        }
        for (int i = 0; i < want; i++) {
            expect(statuses[i] == want_status[i], name, (unsigned long long)want_status[i],
                   (unsigned long long)statuses[i]);
        }
        if (want > 0) {
            expect(closes[want - 1] == want_close, name, (unsigned long long)want_close,
                   (unsigned long long)closes[want - 1]);
        }
    }
}

static void check_error(const char *name, const char *text) {
    size_t left;
    int statuses[16], closes[16];
    expect(deliver(text, strlen(text), NULL, 0, statuses, closes, &left) == -1, name, (unsigned long long)-1, 0);
}

int main(void) {
    check_histogram();
    const int ok[] = {200, 200, 200};
    /* Content-Length (RFC 9112 §6.3 rule 6), two pipelined responses, then the start of a third (left over). */
    check_parse("content-length",
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
                "HTTP/1.1 200 OK\r\ncontent-length:   12  \r\n\r\nHello world!HTTP/1.1 2",
                2, ok, 0, 10);
    /* Chunked (§7.1) with a chunk extension (§7.1.1) and a trailer field (§7.1.2), then one with no trailers. */
    check_parse("chunked",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n"
                "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nExpires: never\r\n\r\n"
                "HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\nConnection: keep-alive, close\r\n\r\n"
                "3\r\nabc\r\n0\r\n\r\n",
                2, (const int[]){200, 201}, 1, 0);
    /* Chunked wins over Content-Length (§6.3 rule 4: the length would be wrong here). */
    check_parse("chunked over length",
                "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 1,
                ok, 0, 0);
    /* An interim 1xx (RFC 9110 §15.2) is skipped, and its fields are not the final response's. */
    check_parse("interim", "HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                1, ok, 0, 0);
    /* 204 and 304 have no body whatever they say (§6.3 rule 1); an empty Content-Length body completes at once. */
    check_parse("no body",
                "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"
                "HTTP/1.0 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                3, (const int[]){204, 304, 500}, 1, 0);
    /* Incomplete: the head or the body not all there yet. */
    check_parse("incomplete head", "HTTP/1.1 200 OK\r\nContent-Len", 0, ok, 0, 28);
    check_parse("incomplete body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, ok, 0, 0);
    check_error("no framing", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello");
    check_error("not HTTP", "SSH-2.0-OpenSSH_9.2\r\n\r\n");
    check_error("bad status", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n");
    check_error("two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx");
    check_error("bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nx");
    check_error("field without a colon", "HTTP/1.1 200 OK\r\nContent-Length 1\r\n\r\nx");
    check_error("bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    check_error("chunk size overflow",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n");
    check_error("chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n");
    check_error("bare LF chunk line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n");
    if (failures) {
        return 1;
    }
    puts("ok");
    return 0;
}
