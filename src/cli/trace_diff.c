/* `samebits trace-diff A B`: the first op whose output differs between two
 * traces written by `samebits train --trace` (or sb_trace_open). Exit 0 when
 * identical, 1 at the first difference, 2 for a bad or damaged file. Both
 * files are checked completely (trailer and checksum) before any comparison,
 * so a damaged file is never mistaken for a divergence. */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "io/io_internal.h"
#include "samebits.h"
#include "samebits/trace.h"

static int trace_error(void) {
    fprintf(stderr, "samebits trace-diff: %s\n", sb_last_error());
    if (strstr(sb_last_error(), "limit of"))
        fprintf(stderr, "samebits trace-diff: --max-record-mib N raises the limit\n");
    return 2;
}

/* The largest record whose values are read, in bytes (--max-record-mib). */
static uint64_t max_record = SB_TRACE_MAX_VALUES_DEFAULT;

static sb_status open_reader(sb_trace_reader **r, const char *path) {
    sb_status s = sb_trace_reader_open_path(r, path);
    if (s != SB_OK) return s;
    s = sb_trace_reader_set_max_values(*r, max_record);
    if (s != SB_OK) { sb_trace_reader_free(*r); *r = NULL; }
    return s;
}

static int count_records(const char *path, uint64_t *n) {
    sb_trace_reader *r;
    if (open_reader(&r, path) != SB_OK) return 0;
    sb_trace_entry e;
    bool done = false;
    *n = 0;
    while (!done) {
        if (sb_trace_reader_next(r, &e, &done) != SB_OK) { sb_trace_reader_free(r); return 0; }
        if (e.has_values && !done && sb_trace_reader_values(r, &e) != SB_OK) { sb_trace_reader_free(r); return 0; }
        if (!done) (*n)++;
    }
    sb_trace_reader_free(r);
    return 1;
}

static void shape_str(const sb_trace_entry *e, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    if (e->ndim == 0) { snprintf(buf, cap, "scalar"); return; }
    for (int k = 0; k < e->ndim && at < cap; k++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%" PRId64, k ? "x" : "", e->shape[k]);
}

static void describe(const char *label, const sb_trace_entry *e) {
    char sh[160];
    shape_str(e, sh, sizeof sh);
    printf("  %s: step %" PRIu64 ", op %" PRIu64 " %s %s (%s)\n", label, e->step, e->op, e->name, sh,
           sb_dtype_name(e->dtype));
}

static uint64_t element(const sb_trace_entry *e, int64_t i) {
    size_t es = sb_dtype_size(e->dtype);
    uint64_t v = 0;
    for (size_t b = es; b-- > 0;) v = v << 8 | e->values[(size_t)i * es + b];
    return v;
}

static void print_value(const char *label, const sb_trace_entry *e, uint64_t v) {
    if (e->dtype == SB_F32) {
        uint32_t u = (uint32_t)v;
        float f;
        memcpy(&f, &u, 4);
        printf("  %s: 0x%08" PRIx32 "  %.9g\n", label, u, (double)f);
    } else if (e->dtype == SB_I32) {
        printf("  %s: 0x%08" PRIx32 "  %" PRId32 "\n", label, (uint32_t)v, (int32_t)(uint32_t)v);
    } else {
        printf("  %s: 0x%016" PRIx64 "  %" PRId64 "\n", label, v, (int64_t)v);
    }
}

/* Equal under the hash's rule: all float NaNs are one value. */
static bool same(const sb_trace_entry *e, uint64_t a, uint64_t b) {
    if (e->dtype == SB_F32) {
        bool na = (a & 0x7fffffffu) > 0x7f800000u, nb = (b & 0x7fffffffu) > 0x7f800000u;
        if (na || nb) return na && nb;
    }
    return a == b;
}

static int report_values(sb_trace_reader *ra, sb_trace_entry *a, sb_trace_reader *rb, sb_trace_entry *b) {
    if (!a->has_values || !b->has_values) {
        printf("  (a trace was written with --trace-hashes-only: no element values to compare)\n");
        return 1;
    }
    if (sb_trace_reader_values(ra, a) != SB_OK || sb_trace_reader_values(rb, b) != SB_OK) return trace_error();
    for (int64_t i = 0; i < a->numel; i++) {
        uint64_t va = element(a, i), vb = element(b, i);
        if (same(a, va, vb)) continue;
        char idx[200] = "";
        size_t at = 0;
        int64_t rest = i, sub[SB_MAX_DIMS];
        for (int k = a->ndim - 1; k >= 0; k--) { sub[k] = rest % a->shape[k]; rest /= a->shape[k]; }
        for (int k = 0; k < a->ndim; k++)
            at += (size_t)snprintf(idx + at, sizeof idx - at, "%s%" PRId64, k ? ", " : "", sub[k]);
        printf("  first differing element: flat index %" PRId64 ", index [%s]\n", i, idx);
        print_value("A", a, va);
        print_value("B", b, vb);
        return 1;
    }
    printf("  (hashes differ but no element does: the record's hash is inconsistent)\n");
    return 1;
}

/* `samebits trace-diff --list A`: one line per record. */
static int list_trace(const char *path) {
    sb_trace_reader *r;
    if (open_reader(&r, path) != SB_OK) return trace_error();
    int rc = 0;
    for (;;) {
        sb_trace_entry e;
        bool done;
        if (sb_trace_reader_next(r, &e, &done) != SB_OK) { rc = trace_error(); break; }
        if (done) break;
        char sh[160], hex[65];
        shape_str(&e, sh, sizeof sh);
        sb_hex_digest(e.sha256, hex);
        printf("step %" PRIu64 " op %" PRIu64 " %s %s %s %s\n", e.step, e.op, e.name, sh, sb_dtype_name(e.dtype), hex);
    }
    sb_trace_reader_free(r);
    return rc;
}

static int usage(void) {
    fprintf(stderr, "usage: samebits trace-diff [--max-record-mib N] A B   first op whose output differs\n"
                    "       samebits trace-diff --list A                    every record of a trace\n"
                    "  --max-record-mib N  read records of up to N MiB of values (default %llu)\n",
            (unsigned long long)(SB_TRACE_MAX_VALUES_DEFAULT >> 20));
    return 2;
}

int sb_cli_trace_diff(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[0], "--list")) return list_trace(argv[1]);
    if (argc >= 2 && !strcmp(argv[0], "--max-record-mib")) {
        uint64_t mib;
        /* 1..2^30 MiB: the byte count stays far inside 64 bits */
        if (sb_parse_u64("samebits trace-diff", argv[0], argv[1], 1, UINT64_C(1) << 30, &mib) != SB_OK) {
            fprintf(stderr, "%s\n", sb_last_error());
            return usage();
        }
        max_record = mib << 20;
        argc -= 2;
        argv += 2;
    }
    if (argc != 2) return usage();
    uint64_t na, nb;
    if (!count_records(argv[0], &na) || !count_records(argv[1], &nb)) return trace_error();
    sb_trace_reader *ra = NULL, *rb = NULL;
    if (open_reader(&ra, argv[0]) != SB_OK || open_reader(&rb, argv[1]) != SB_OK) {
        sb_trace_reader_free(ra);
        return trace_error();
    }
    int rc = 0;
    for (uint64_t k = 0;; k++) {
        sb_trace_entry a, b;
        bool da, db;
        if (sb_trace_reader_next(ra, &a, &da) != SB_OK || sb_trace_reader_next(rb, &b, &db) != SB_OK) {
            rc = trace_error();
            break;
        }
        if (da && db) {
            printf("traces identical: %" PRIu64 " ops\n", k);
            break;
        }
        rc = 1;
        if (da || db) {
            printf("%s ends after %" PRIu64 " ops; %s goes on with:\n", da ? "A" : "B", k, da ? "B" : "A");
            describe(da ? "B" : "A", da ? &b : &a);
            break;
        }
        bool same_op = a.step == b.step && a.op == b.op && !strcmp(a.name, b.name) && a.dtype == b.dtype &&
                       a.ndim == b.ndim && !memcmp(a.shape, b.shape, sizeof a.shape);
        if (!same_op) {
            printf("the runs executed different ops at record %" PRIu64 " (same outputs before it):\n", k);
            describe("A", &a);
            describe("B", &b);
            break;
        }
        if (!memcmp(a.sha256, b.sha256, 32)) { rc = 0; continue; }
        char sh[160];
        shape_str(&a, sh, sizeof sh);
        printf("first difference: step %" PRIu64 ", op %" PRIu64 " (%s), shape %s (%s), after %" PRIu64
               " identical ops\n", a.step, a.op, a.name, sh, sb_dtype_name(a.dtype), k);
        rc = report_values(ra, &a, rb, &b);
        break;
    }
    sb_trace_reader_free(ra);
    sb_trace_reader_free(rb);
    return rc;
}
