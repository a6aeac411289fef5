/* The vector file of `samebits verify` (format: docs/VERIFY-AND-TRACE.md):
 * reading it (a regular file of at most 64 MiB, no NUL bytes), parsing its
 * lines, printing lines (--generate) and embedding it as C (--emit-c).
 * Parsing checks the syntax (known op, seed, tier, NAME=64 hex digits); the
 * parameters are checked by the op's runner. fuzz/fuzz_verify.c drives it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/verify_internal.h"
#include "io/io_internal.h"

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* One line: OP SEED TIER PARAMS NAME=HASH... ; comments (#) and blank lines
 * are skipped (returns 0); 1 for a case; -1 with a message on error. */
static int parse_line(char *line, vcase *c, const char *src, int lineno) {
    char *save, *tok[4 + MAX_OUT + 1];
    int n = 0;
    for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == 0 && t[0] == '#') return 0;
        if (n == 4 + MAX_OUT) { fprintf(stderr, "samebits verify: %s:%d: too many fields\n", src, lineno); return -1; }
        tok[n++] = t;
    }
    if (n == 0) return 0;
    memset(c, 0, sizeof *c);
    char *end;
    if (n < 5 || strlen(tok[0]) >= sizeof c->op || strlen(tok[3]) >= sizeof c->params || !sb_verify_known_op(tok[0])) {
        fprintf(stderr, "samebits verify: %s:%d: expected 'OP SEED quick|full PARAMS NAME=SHA256...' with a known op\n",
                src, lineno);
        return -1;
    }
    strcpy(c->op, tok[0]);
    c->seed = strtoull(tok[1], &end, 10);
    if (!*tok[1] || *end || (strcmp(tok[2], "quick") && strcmp(tok[2], "full"))) {
        fprintf(stderr, "samebits verify: %s:%d: bad seed or tier\n", src, lineno);
        return -1;
    }
    c->quick = !strcmp(tok[2], "quick");
    c->lineno = lineno;
    strcpy(c->params, strcmp(tok[3], "-") ? tok[3] : "");
    for (int i = 4; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq || eq == tok[i] || eq - tok[i] >= 32 || strlen(eq + 1) != 64) {
            fprintf(stderr, "samebits verify: %s:%d: bad output '%s' (NAME=64 hex digits)\n", src, lineno, tok[i]);
            return -1;
        }
        memcpy(c->out_name[c->n_out], tok[i], (size_t)(eq - tok[i]));
        for (int b = 0; b < 32; b++) {
            int hi = hexval(eq[1 + 2 * b]), lo = hexval(eq[2 + 2 * b]);
            if (hi < 0 || lo < 0) {
                fprintf(stderr, "samebits verify: %s:%d: bad hex digest for '%s'\n", src, lineno,
                        c->out_name[c->n_out]);
                return -1;
            }
            c->out_hash[c->n_out][b] = (unsigned char)(hi << 4 | lo);
        }
        c->n_out++;
    }
    return 1;
}

int sb_verify_parse_vectors(const char *text, const char *src, vcase **out, int *count) {
    *out = NULL;
    *count = 0;
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy) return 0;
    memcpy(copy, text, len + 1);
    int cap = 0, lineno = 0, ok = 1;
    for (char *line = copy, *next; line && ok; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        vcase c;
        int r = parse_line(line, &c, src, lineno);
        if (r < 0) { ok = 0; break; }
        if (r == 0) continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 64;
            vcase *nv = realloc(*out, (size_t)cap * sizeof *nv);
            if (!nv) { ok = 0; break; }
            *out = nv;
        }
        (*out)[(*count)++] = c;
    }
    free(copy);
    if (ok && *count == 0) {
        fprintf(stderr, "samebits verify: %s holds no vectors\n", src);
        ok = 0;
    }
    if (!ok) { free(*out); *out = NULL; }
    return ok;
}

char *sb_verify_read_file(const char *path) {
    FILE *f;
    /* a regular file of at most 64 MiB: a FIFO would block forever */
    if (sb_fopen_regular("samebits verify", path, (uint64_t)64 << 20, &f, NULL) != SB_OK) {
        fprintf(stderr, "%s\n", sb_last_error());
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            if (cap > ((size_t)64 << 20)) { fprintf(stderr, "samebits verify: %s is too large\n", path); free(buf); buf = NULL; break; }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; }
            buf = nb;
        }
    }
    if (buf && ferror(f)) { fprintf(stderr, "samebits verify: error reading %s\n", path); free(buf); buf = NULL; }
    fclose(f);
    if (buf) buf[n] = 0;
    if (buf && strlen(buf) != n) { fprintf(stderr, "samebits verify: %s contains NUL bytes\n", path); free(buf); buf = NULL; }
    return buf;
}

void sb_verify_print_line(const vcase *c, const run_ctx *r, FILE *f) {
    fprintf(f, "%s %" PRIu64 " %s %s", c->op, c->seed, c->quick ? "quick" : "full", c->params[0] ? c->params : "-");
    for (int i = 0; i < r->n_out; i++) {
        char hex[65];
        sb_hex_digest(r->out_hash[i], hex);
        fprintf(f, " %s=%s", r->out_name[i], hex);
    }
    fputc('\n', f);
}

int sb_verify_emit_c(const char *path) {
    char *text = sb_verify_read_file(path);
    if (!text) return 1;
    vcase *cases;
    int count;
    if (!sb_verify_parse_vectors(text, path, &cases, &count)) { free(text); return 1; }
    free(cases);
    printf("/* Generated by `samebits verify --emit-c tests/vectors/ops.txt`: the op test\n"
           " * vectors built into `samebits verify`. Do not edit; regenerate. */\n"
           "extern const char sb_verify_vectors_text[];\n"
           "const char sb_verify_vectors_text[] =\n");
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        printf("    \"");
        for (size_t i = 0; i < len; i++) {
            char ch = line[i];
            if (ch == '"' || ch == '\\') printf("\\%c", ch);
            else if (ch >= 0x20 && ch < 0x7f) putchar(ch);
            else printf("\\%03o", (unsigned char)ch);
        }
        printf("%s\"\n", next ? "\\n" : "");
        if (!next) break;
        next++;
    }
    printf("    ;\n");
    free(text);
    return 0;
}
