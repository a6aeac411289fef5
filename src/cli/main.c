/* build/samebits - the command-line tool. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/gpt_cli.h"
#include "io/io_internal.h"
#include "samebits.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: samebits <command> [options]\n"
            "commands:\n"
            "  train [opts]   train LeNet-5 reproducibly and print the four hash lines\n"
            "                 --data DIR --epochs N (1..1000000) --batch-size N (1..1e9)\n"
            "                 --lr X (a normal float32 > 0) --seed N (0..2^64-1)\n"
            "                 --threads N (1..256; default: all CPUs; bits never depend on it)\n"
            "                 --limit-batches N (1..1e9) --save PATH --resume PATH\n"
            "                 --micro-batch N (divides the batch size; default: the batch size)\n"
            "                 --trace FILE [--trace-hashes-only]  record every op's output\n"
            "                 --device cpu|mirror|cuda|opencl  where the model runs (same bits)\n"
            "  train --model gpt [opts]  a small GPT at character level (README, \"A small GPT\")\n"
            "                 --corpus FILE --steps N --batch-size N --lr X --seed N --threads N\n"
            "                 --context N --d-model N --heads N --layers N --tied --save PATH\n"
            "  generate [opts] sample text from a GPT with a KV cache\n"
            "                 --prompt TEXT --tokens N --checkpoint PATH | --seed N --corpus FILE\n"
            "                 --temperature X --top-k N --top-p X --sample-seed N --no-cache\n"
            "                 and the model options of train --model gpt\n"
            "  eval CKPT      score a LeNet-5 checkpoint on the test set [--data DIR]\n"
            "  hash CKPT      print a checkpoint's model hash\n"
            "  version        print the version\n"
            "  hash-file F    SHA-256 of a file's bytes\n"
            "  verify [opts]  self-check this machine against the committed op test vectors\n"
            "                 --quick --vectors FILE --data DIR --generate --list\n"
            "  trace-diff A B the first op whose output differs between two traces\n");
    return f == stderr ? 2 : 0;
}

static int cmd_hash_file(const char *path) {
    FILE *f;
    if (sb_fopen_regular("hash-file", path, 0, &f, NULL) != SB_OK) {
        fprintf(stderr, "samebits: %s\n", sb_last_error());
        return 1;
    }
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_sha256_update(&ctx, buf, n);
    int err = ferror(f);
    fclose(f);
    if (err) { fprintf(stderr, "samebits: error reading %s\n", path); return 1; }
    unsigned char d[32];
    char hex[65];
    sb_sha256_final(&ctx, d);
    sb_hex_digest(d, hex);
    printf("%s  %s\n", hex, path);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(stderr);
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("samebits %s\n", SB_VERSION_STRING);
        return 0;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) return usage(stdout);
    if (!strcmp(argv[1], "train")) return sb_cli_train(argc - 2, argv + 2);
    if (!strcmp(argv[1], "generate")) return sb_cli_generate(argc - 2, argv + 2);
    if (!strcmp(argv[1], "eval")) return sb_cli_eval(argc - 2, argv + 2);
    if (!strcmp(argv[1], "hash")) return sb_cli_hash(argc - 2, argv + 2);
    if (!strcmp(argv[1], "verify")) return sb_cli_verify(argc - 2, argv + 2);
    if (!strcmp(argv[1], "trace-diff")) return sb_cli_trace_diff(argc - 2, argv + 2);
    if (!strcmp(argv[1], "hash-file") && argc == 3) return cmd_hash_file(argv[2]);
    fprintf(stderr, "samebits: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
