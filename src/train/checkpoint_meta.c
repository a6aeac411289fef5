/* Checkpoint metadata: the training counters and settings as decimal
 * strings, written and read back with the same ranges, so a checkpoint that
 * samebits writes is one it accepts, and a hand-edited or damaged one is
 * refused at load with the field named rather than overflowing later.
 * The seed is a full u64 on both sides. */
#include <inttypes.h>
#include <stdio.h>
#include "core/internal.h"
#include "io/io_internal.h"
#include "train/train_internal.h"

static sb_status check_model_name(const char *fn, const char model[32]) {
    if (!memchr(model, '\0', 32) || !model[0])
        return sb_fail(SB_ERR_ARG, "%s: state->model must be a non-empty string of at most 31 bytes", fn);
    return SB_OK;
}

sb_status sb_checkpoint_meta_format(const char *fn, const sb_checkpoint_meta *m,
                                    sb_checkpoint_meta_text *out) {
    const sb_train_state *s = &m->state;
    SB_TRY(check_model_name(fn, s->model));
    if (!m->optimizer || !*m->optimizer) return sb_fail(SB_ERR_ARG, "%s: optimizer kind is empty", fn);
    if (s->epoch < 0 || s->epoch > SB_TRAIN_MAX_EPOCHS)
        return sb_fail(SB_ERR_ARG, "%s: epoch %" PRId64 " is out of range 0..%" PRId64, fn, s->epoch,
                       SB_TRAIN_MAX_EPOCHS);
    if (s->batch_size < 1 || s->batch_size > SB_TRAIN_MAX_BATCH_SIZE)
        return sb_fail(SB_ERR_ARG, "%s: batch_size %" PRId64 " is out of range 1..%" PRId64, fn,
                       s->batch_size, SB_TRAIN_MAX_BATCH_SIZE);
    if (m->optimizer_steps < 0 || m->optimizer_steps > SB_TRAIN_MAX_STEPS)
        return sb_fail(SB_ERR_ARG, "%s: optimizer steps %" PRId64 " is out of range 0..%" PRId64, fn,
                       m->optimizer_steps, SB_TRAIN_MAX_STEPS);
    int64_t micro = m->micro_batch ? m->micro_batch : s->batch_size;
    if (micro < 1 || micro > s->batch_size || s->batch_size % micro)
        return sb_fail(SB_ERR_ARG, "%s: micro_batch %" PRId64 " does not divide batch_size %" PRId64, fn,
                       m->micro_batch, s->batch_size);
    snprintf(out->seed, sizeof out->seed, "%" PRIu64, s->seed);
    snprintf(out->micro_batch, sizeof out->micro_batch, "%" PRId64, micro);
    snprintf(out->epoch, sizeof out->epoch, "%" PRId64, s->epoch);
    snprintf(out->batch_size, sizeof out->batch_size, "%" PRId64, s->batch_size);
    snprintf(out->steps, sizeof out->steps, "%" PRId64, m->optimizer_steps);
    const sb_kv kv[SB_CHECKPOINT_META_COUNT] = {
        {"format", SB_CHECKPOINT_FORMAT}, {"model", s->model},       {"optimizer", m->optimizer},
        {"seed", out->seed},              {"epoch", out->epoch},     {"batch_size", out->batch_size},
        {"optimizer_steps", out->steps},  {"micro_batch", out->micro_batch}};
    memcpy(out->kv, kv, sizeof kv);
    return SB_OK;
}

/* The value of key, or an error naming the file and the key. */
static sb_status get(const char *fn, const char *path, const sb_safetensors *st, const char *key,
                     const char **v) {
    if (sb_safetensors_get_meta(st, key, v) != SB_OK)
        return sb_fail(SB_ERR_FORMAT, "%s: %s is not a samebits checkpoint (no \"%s\")", fn, path, key);
    return SB_OK;
}

/* A counter field, parsed by the same checked parser as the CLI options;
 * the failure is reported as a format error naming the file. */
static sb_status counter(const char *fn, const char *path, const sb_safetensors *st, const char *key,
                         int64_t min, int64_t max, int64_t *out) {
    const char *v;
    SB_TRY(get(fn, path, st, key, &v));
    if (sb_parse_i64(fn, key, v, min, max, out) != SB_OK)
        return sb_fail(SB_ERR_FORMAT, "%s: %s: bad \"%s\" value \"%.40s\": must be a decimal integer in %" PRId64
                       "..%" PRId64, fn, path, key, v, min, max);
    return SB_OK;
}

sb_status sb_checkpoint_meta_parse(const char *fn, const char *path, const sb_safetensors *st,
                                   const char *want_model, const char *want_optimizer,
                                   sb_checkpoint_meta *out) {
    const char *v;
    sb_checkpoint_meta m = {0};
    SB_TRY(get(fn, path, st, "format", &v));
    if (strcmp(v, SB_CHECKPOINT_FORMAT))
        return sb_fail(SB_ERR_FORMAT, "%s: %s is not a samebits checkpoint (format \"%.40s\", expected \"%s\")",
                       fn, path, v, SB_CHECKPOINT_FORMAT);
    SB_TRY(get(fn, path, st, "model", &v));
    if (want_model && strcmp(v, want_model))
        return sb_fail(SB_ERR_ARG, "%s: %s holds model \"%.40s\", expected \"%s\"", fn, path, v, want_model);
    if (strlen(v) >= sizeof m.state.model || !*v)
        return sb_fail(SB_ERR_FORMAT, "%s: %s: model name \"%.40s\" is empty or longer than %zu bytes", fn,
                       path, v, sizeof m.state.model - 1);
    memcpy(m.state.model, v, strlen(v) + 1);
    SB_TRY(get(fn, path, st, "optimizer", &m.optimizer));
    if (want_optimizer && strcmp(m.optimizer, want_optimizer))
        return sb_fail(SB_ERR_ARG, "%s: %s was saved with optimizer \"%.40s\", not %s", fn, path,
                       m.optimizer, want_optimizer);
    SB_TRY(get(fn, path, st, "seed", &v));
    if (sb_parse_u64(fn, "seed", v, 0, UINT64_MAX, &m.state.seed) != SB_OK)
        return sb_fail(SB_ERR_FORMAT, "%s: %s: bad \"seed\" value \"%.40s\": must be a decimal integer in 0..%" PRIu64,
                       fn, path, v, UINT64_MAX);
    SB_TRY(counter(fn, path, st, "epoch", 0, SB_TRAIN_MAX_EPOCHS, &m.state.epoch));
    SB_TRY(counter(fn, path, st, "batch_size", 1, SB_TRAIN_MAX_BATCH_SIZE, &m.state.batch_size));
    SB_TRY(counter(fn, path, st, "optimizer_steps", 0, SB_TRAIN_MAX_STEPS, &m.optimizer_steps));
    /* Files from before micro-batches existed trained on whole batches. */
    if (sb_safetensors_get_meta(st, "micro_batch", &v) != SB_OK) {
        m.micro_batch = m.state.batch_size;
    } else {
        SB_TRY(counter(fn, path, st, "micro_batch", 1, m.state.batch_size, &m.micro_batch));
        if (m.state.batch_size % m.micro_batch)
            return sb_fail(SB_ERR_FORMAT, "%s: %s: \"micro_batch\" %" PRId64 " does not divide \"batch_size\" %" PRId64,
                           fn, path, m.micro_batch, m.state.batch_size);
    }
    *out = m;
    return SB_OK;
}
