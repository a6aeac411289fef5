/* `samebits train` and `samebits eval`: the reproducible LeNet-5 run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/gpt_cli.h"
#include "cli/options.h"
#include "cli/train_options.h"
#include "dist/micro_step.h"
#include "io/io_internal.h"
#include "samebits.h"
#include "samebits/train.h"
#include "samebits/trace.h"

/* t itself when it is already on `device`, else a copy there in *copy
 * (NULL when none was made; free it after use). */
static sb_status on_device(sb_tensor *t, sb_device device, sb_tensor **use, sb_tensor **copy) {
    *copy = NULL;
    *use = t;
    if (t->device == device) return SB_OK;
    sb_status s = sb_tensor_to(copy, t, device);
    if (s == SB_OK) *use = *copy;
    return s;
}

/* "rank R: " before every message of a run over several processes. */
static char rank_label[32];

static int fail(const char *what) {
    fprintf(stderr, "samebits: %s%s: %s\n", rank_label, what, sb_last_error());
    return 1;
}

static void print_hash(const char *label, const unsigned char d[32]) {
    char hex[65];
    sb_hex_digest(d, hex);
    printf("%s: %s\n", label, hex);
}

/* Logits of the whole test set in eval mode (1000 rows at a time: rows are
 * independent under the contract, so the batch size does not change bits). */
static int evaluate(sb_module *model, const sb_dataset *test, sb_graph *g, sb_device device) {
    int64_t classes = 10, n = test->count, correct = 0;
    sb_tensor *logits;
    int64_t shape[2] = {n, classes};
    if (sb_tensor_new(&logits, SB_F32, 2, shape) != SB_OK) return fail("eval");
    sb_loader *loader;
    if (sb_loader_new(&loader, test, 1000, false, 0) != SB_OK) return fail("eval");
    sb_module_train(model, false);
    int rc = 0;
    for (int64_t b = 0, row = 0; b < sb_loader_num_batches(loader) && !rc; b++) {
        sb_graph_reset(g);
        sb_tensor *x, *y, *xd = NULL, *xcopy = NULL, *zhost = NULL, *zcopy = NULL;
        sb_variable *in, *out;
        if (sb_loader_batch(loader, b, sb_graph_arena(g), &x, &y) != SB_OK ||
            on_device(x, device, &xd, &xcopy) != SB_OK || sb_graph_input(g, xd, &in) != SB_OK ||
            sb_module_forward(model, g, in, &out) != SB_OK ||
            on_device(out->value, SB_DEVICE_CPU, &zhost, &zcopy) != SB_OK) {
            sb_tensor_free(xcopy);
            rc = fail("eval");
            break;
        }
        int64_t rows = x->shape[0];
        const float *z = zhost->data;
        memcpy((float *)logits->data + row * classes, z, (size_t)(rows * classes) * sizeof *z);
        for (int64_t r = 0; r < rows; r++) {
            int64_t best = 0;
            for (int64_t c = 1; c < classes; c++)
                if (z[r * classes + c] > z[r * classes + best]) best = c;
            correct += best == ((int64_t *)y->data)[r];
        }
        row += rows;
        sb_tensor_free(xcopy);
        sb_tensor_free(zcopy);
    }
    if (!rc) {
        printf("Test accuracy of the model on the %" PRId64 " test images: %.4f\n", n, (double)correct / (double)n);
        unsigned char d[32];
        const sb_tensor *list[1] = {logits};
        sb_hash_tensors(list, 1, d);
        print_hash("Hash of the logits", d);
    }
    sb_loader_free(loader);
    sb_tensor_free(logits);
    return rc;
}

/* After each optimizer step, the parameters join the trace as ops named
 * "param.<name>" (the optimizer's outputs). */
/* One whole-batch step's gradient on a device other than the CPU (the
 * micro-batch reduction runs on host gradients, so off the CPU a step is a
 * single micro-batch, which the options ensure): the batch goes to the
 * model's device, the loss comes back for the progress line. */
static sb_status device_gradient(sb_module *model, sb_graph *g, sb_loader *loader, int64_t b,
                                 sb_device device, float *lv) {
    sb_graph_reset(g);
    sb_tensor *x = NULL, *y = NULL, *xd = NULL, *yd = NULL, *lv_host = NULL;
    sb_tensor *copies[3] = {NULL, NULL, NULL};
    sb_variable *in = NULL, *logits = NULL, *loss = NULL;
    sb_status st = sb_loader_batch(loader, b, sb_graph_arena(g), &x, &y);
    if (st == SB_OK) st = on_device(x, device, &xd, &copies[0]);
    if (st == SB_OK) st = on_device(y, device, &yd, &copies[1]);
    if (st == SB_OK) st = sb_graph_input(g, xd, &in);
    if (st == SB_OK) st = sb_module_forward(model, g, in, &logits);
    if (st == SB_OK) st = sb_ag_cross_entropy(g, logits, yd, SB_LOSS_MEAN, 0.0f, &loss);
    if (st == SB_OK) st = sb_graph_backward(g, loss);
    if (st == SB_OK) st = on_device(loss->value, SB_DEVICE_CPU, &lv_host, &copies[2]);
    if (st == SB_OK) *lv = ((const float *)lv_host->data)[0];
    for (int k = 0; k < 3; k++) sb_tensor_free(copies[k]);
    return st;
}

static sb_status trace_parameters(sb_module *model) {
    sb_named params[64];
    size_t count;
    sb_status s = sb_module_parameters(model, params, 64, &count);
    for (size_t i = 0; i < count && i < 64 && s == SB_OK; i++) {
        char name[80];
        snprintf(name, sizeof name, "param.%.56s", params[i].name);
        sb_tensor *host = NULL, *copy = NULL;
        s = on_device(params[i].value, SB_DEVICE_CPU, &host, &copy);
        if (s == SB_OK) s = sb_trace_record(name, host);
        sb_tensor_free(copy);
    }
    return s;
}

/* What every process of a run must share, as one digest: the build's
 * version and contract revision, every setting that changes bits, and the
 * data (train and test images and labels). */
static void settings_digest(const sb_train_options *o, const sb_dataset *train, const sb_dataset *test,
                            unsigned char d[32]) {
    char text[512];
    snprintf(text, sizeof text, "samebits %s|%s|seed %" PRIu64 "|epochs %" PRId64 "|batch %" PRId64
             "|micro %" PRId64 "|limit %" PRId64 "|lr %a|resume %s", SB_VERSION_STRING, SB_DIST_CONTRACT,
             o->seed, o->epochs, o->batch_size, o->micro_batch, o->limit_batches, o->lr,
             o->resume ? "yes" : "no");
    unsigned char data[32];
    const sb_tensor *t[4] = {train->images, train->labels, test->images, test->labels};
    sb_hash_tensors(t, 4, data);
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    sb_sha256_update(&ctx, text, strlen(text));
    sb_sha256_update(&ctx, data, sizeof data);
    sb_sha256_final(&ctx, d);
}

/* The model and counters a run starts from (after --resume). */
static void start_digest(sb_module *model, sb_optimizer *opt, const sb_train_state *s, unsigned char d[32]) {
    unsigned char m[32];
    char text[128];
    sb_module_hash(model, m);
    snprintf(text, sizeof text, "epoch %" PRId64 "|steps %" PRId64, s->epoch, sb_optimizer_steps(opt));
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    sb_sha256_update(&ctx, m, sizeof m);
    sb_sha256_update(&ctx, text, strlen(text));
    sb_sha256_final(&ctx, d);
}

/* `--model gpt` hands the run to the GPT (gpt_train.c); `--model lenet5`
 * (the default) is the LeNet-5 run below. */
int sb_cli_train(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--model") != 0) continue;
        if (i + 1 == argc) {
            fprintf(stderr, "samebits: train: --model needs a value (lenet5 or gpt)\n");
            return 2;
        }
        const char *model = argv[i + 1];
        if (strcmp(model, "gpt") != 0 && strcmp(model, "lenet5") != 0) {
            fprintf(stderr, "samebits: train: --model '%.40s' must be lenet5 or gpt\n", model);
            return 2;
        }
        for (int j = i; j + 2 < argc; j++) argv[j] = argv[j + 2]; /* drop "--model X" */
        argc -= 2;
        if (!strcmp(model, "gpt")) return sb_cli_train_gpt(argc, argv);
        i--;
    }
    return sb_cli_train_on(argc, argv, sb_comm_single(), NULL);
}

int sb_cli_train_on(int argc, char **argv, sb_comm *comm, bool *stopped_together) {
    if (stopped_together) *stopped_together = false;
    sb_train_options o;
    bool lead = comm->rank == 0; /* prints results and writes files */
    if (comm->size > 1) snprintf(rank_label, sizeof rank_label, "rank %d: ", comm->rank);
    if (sb_cli_train_options(argc, argv, &o) != SB_OK) {
        fprintf(stderr, "samebits: %s%s\n", rank_label, sb_last_error());
        return 2;
    }
    if (o.trace && comm->size > 1) {
        fprintf(stderr, "samebits: %s--trace records one process's ops: run it with one process\n", rank_label);
        return 2;
    }
    if (o.device != SB_DEVICE_CPU && comm->size > 1) {
        fprintf(stderr, "samebits: %s--device %s: processes combine host gradients; run it with one process\n",
                rank_label, sb_device_name(o.device));
        return 2;
    }
    /* A --save that cannot be written must fail now, not after the whole
     * run has trained: create and remove its temp file once. */
    if (lead && o.save && sb_atomic_probe("--save", o.save) != SB_OK) return fail("checking --save");
    int progress_tty = lead && isatty(STDERR_FILENO);
    sb_dataset train = {0}, test = {0};
    sb_module *model = NULL;
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_loader *loader = NULL; /* cuts the data in micro-batches */
    sb_micro_trainer *micro = NULL;
    int rc = 0;
    if (o.threads > 0 && sb_set_num_threads((int)o.threads) != SB_OK) return fail("--threads");
    if (sb_mnist_load(o.data, true, &train) != SB_OK || sb_mnist_load(o.data, false, &test) != SB_OK) {
        rc = fail("loading data");
        goto done;
    }
    sb_adam_config adam = sb_adam_default_config(o.lr);
    if (sb_model_lenet5(&model) != SB_OK || sb_module_init(model, o.seed) != SB_OK ||
        (o.device != SB_DEVICE_CPU && sb_module_to(model, o.device) != SB_OK) ||
        sb_optimizer_adam(&opt, model, &adam) != SB_OK || sb_graph_new(&g) != SB_OK ||
        sb_loader_new(&loader, &train, o.micro_batch, true, o.seed) != SB_OK ||
        (o.device == SB_DEVICE_CPU &&
         sb_micro_trainer_new(&micro, model, o.batch_size, o.micro_batch, comm) != SB_OK)) {
        rc = fail("setting up");
        goto done;
    }
    unsigned char d[32], initial[32];
    sb_module_hash(model, initial);
    sb_train_state state = {o.seed, 0, o.batch_size, "lenet5"};
    if (o.resume) {
        sb_train_state saved = state;
        int64_t saved_micro = 0;
        if (sb_checkpoint_load_micro(o.resume, model, opt, &saved, &saved_micro) != SB_OK) {
            rc = fail("resuming");
            goto done;
        }
        if (saved.seed != o.seed || saved.batch_size != o.batch_size || saved_micro != o.micro_batch) {
            fprintf(stderr, "samebits: %s%s was trained with seed %" PRIu64 ", batch size %" PRId64
                    " and micro-batch %" PRId64 "; pass the same --seed, --batch-size and --micro-batch to resume exactly\n",
                    rank_label, o.resume, saved.seed, saved.batch_size, saved_micro);
            rc = 1;
            goto done;
        }
        state = saved;
    }
    if (comm->size > 1) { /* every rank stops here, with the same message, on a mismatch */
        settings_digest(&o, &train, &test, d);
        bool same = comm->agree(comm, d, "build, settings or data") == SB_OK;
        if (same) {
            start_digest(model, opt, &state, d);
            same = comm->agree(comm, d, "starting model") == SB_OK;
        }
        if (!same) {
            if (stopped_together) *stopped_together = true; /* every rank saw the same digests */
            rc = fail("starting");
            goto done;
        }
    }
    if (lead) print_hash("Hash of the initial model", initial);
    /* steps per epoch: ceil(count / batch size), as the loader counts */
    int64_t batches = train.count / o.batch_size + (train.count % o.batch_size != 0);
    if (o.limit_batches && o.limit_batches < batches) batches = o.limit_batches;
    if (o.trace && sb_trace_open(o.trace, o.trace_hashes_only ? SB_TRACE_HASHES_ONLY : 0) != SB_OK) {
        rc = fail("opening the trace");
        goto done;
    }
    for (int64_t epoch = state.epoch; epoch < o.epochs && !rc; epoch++) {
        sb_module_train(model, true);
        if (sb_loader_set_epoch(loader, epoch) != SB_OK) { rc = fail("shuffling"); break; }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int64_t b = 0; b < batches; b++) {
            sb_trace_step((uint64_t)(epoch * batches + b));
            float lv = 0.0f;
            sb_status st = micro ? sb_micro_trainer_gradient(micro, g, loader, b, &lv)
                                 : device_gradient(model, g, loader, b, o.device, &lv);
            if (st == SB_OK) st = sb_optimizer_step(opt);
            if (st != SB_OK) {
                rc = fail("training");
                break;
            }
            if (o.trace && trace_parameters(model) != SB_OK) { rc = fail("tracing"); break; }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            double rate = (double)((b + 1) * o.batch_size) / (secs > 0 ? secs : 1e-9);
            if (progress_tty) {
                int width = 30, filled = (int)(width * (b + 1) / batches);
                fprintf(stderr, "\repoch %" PRId64 "/%" PRId64 " [%.*s%*s] %" PRId64 "/%" PRId64
                        " loss %.4f  %.0f img/s", epoch + 1, o.epochs, filled,
                        "##############################", width - filled, "", b + 1, batches,
                        (double)lv, rate);
                if (b + 1 == batches) fputc('\n', stderr);
            } else if (lead && ((b + 1) % 100 == 0 || b + 1 == batches)) {
                fprintf(stderr, "epoch %" PRId64 " batch %" PRId64 "/%" PRId64 " loss %.4f %.0f img/s\n",
                        epoch + 1, b + 1, batches, (double)lv, rate);
            }
        }
        state.epoch = epoch + 1;
    }
    if (rc) goto done;
    if (o.trace && sb_trace_close() != SB_OK) { rc = fail("writing the trace"); goto done; }
    if (!lead) goto done; /* the other ranks hold the same model */
    if (o.save && sb_checkpoint_save_micro(o.save, model, opt, &state, o.micro_batch) != SB_OK) { rc = fail("saving"); goto done; }
    sb_module_hash(model, d);
    print_hash("Hash of the trained model", d);
    rc = evaluate(model, &test, g, o.device);
done:
    sb_trace_abort(); /* no-op unless a failure left the trace open */
    sb_micro_trainer_free(micro);
    sb_loader_free(loader);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_dataset_free(&train);
    sb_dataset_free(&test);
    return rc;
}

/* `samebits eval CHECKPOINT [--data DIR]` and `samebits hash CHECKPOINT`:
 * load a LeNet-5 checkpoint; hash prints its model hash (the same line as
 * training's "Hash of the trained model"), eval also scores the test set. */
static int with_checkpoint(int argc, char **argv, bool run_eval) {
    const char *cmd = run_eval ? "eval" : "hash";
    if (argc < 1) {
        fprintf(stderr, "usage: samebits %s CHECKPOINT%s\n", cmd, run_eval ? " [--data DIR]" : "");
        return 2;
    }
    const char *path = argv[0], *data = "/usr/share/datasets/fashion-mnist";
    const sb_cli_option opts[] = {{.name = "--data", .kind = SB_CLI_TEXT, .dest = &data}};
    if (sb_cli_parse_options(cmd, opts, run_eval ? 1 : 0, argc - 1, argv + 1) != SB_OK) {
        fprintf(stderr, "samebits: %s\n", sb_last_error());
        return 2;
    }
    sb_module *model = NULL;
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_dataset test = {0};
    sb_adam_config adam = sb_adam_default_config(0.01);
    sb_train_state state = {0, 0, 0, "lenet5"};
    int rc = 0;
    if (sb_model_lenet5(&model) != SB_OK || sb_optimizer_adam(&opt, model, &adam) != SB_OK ||
        sb_graph_new(&g) != SB_OK) {
        rc = fail(cmd);
    } else if (sb_checkpoint_load(path, model, opt, &state) != SB_OK) {
        rc = fail("loading checkpoint");
    } else {
        unsigned char d[32];
        sb_module_hash(model, d);
        print_hash("Hash of the model", d);
        if (run_eval) {
            if (sb_mnist_load(data, false, &test) != SB_OK) rc = fail("loading data");
            else rc = evaluate(model, &test, g, SB_DEVICE_CPU);
        }
    }
    sb_dataset_free(&test);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    return rc;
}

int sb_cli_eval(int argc, char **argv) { return with_checkpoint(argc, argv, true); }
int sb_cli_hash(int argc, char **argv) { return with_checkpoint(argc, argv, false); }
