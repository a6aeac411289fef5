/* libFuzzer target for checkpoint metadata: the input is a safetensors
 * file (the committed seeds are checkpoints' headers without tensors);
 * whatever the in-memory parser accepts goes through
 * sb_checkpoint_meta_parse, which must either refuse it with a message
 * naming the input or return counters inside their documented ranges that
 * format back (sb_checkpoint_meta_format) to text that parses to the same
 * values. Build and run: fuzz/run.sh. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "io/io_internal.h"
#include "train/train_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sb_safetensors *st = NULL;
    if (sb_safetensors_parse_buffer(data, size, "fuzz", &st) != SB_OK) return 0;
    sb_checkpoint_meta m;
    sb_clear_error();
    if (sb_checkpoint_meta_parse("fuzz", "fuzz", st, NULL, NULL, &m) != SB_OK) {
        if (!strstr(sb_last_error(), "fuzz")) abort();
        sb_safetensors_free(st);
        return 0;
    }
    const sb_train_state *s = &m.state;
    if (s->epoch < 0 || s->epoch > SB_TRAIN_MAX_EPOCHS || s->batch_size < 1 ||
        s->batch_size > SB_TRAIN_MAX_BATCH_SIZE || m.optimizer_steps < 0 ||
        m.optimizer_steps > SB_TRAIN_MAX_STEPS || !s->model[0] || !memchr(s->model, 0, sizeof s->model) ||
        m.micro_batch < 1 || s->batch_size % m.micro_batch)
        abort();
    sb_checkpoint_meta_text text;
    if (sb_checkpoint_meta_format("fuzz", &m, &text) != SB_OK) abort();
    uint64_t seed;
    int64_t epoch, batch, steps;
    if (sb_parse_u64("fuzz", "seed", text.seed, 0, UINT64_MAX, &seed) != SB_OK || seed != s->seed) abort();
    if (sb_parse_i64("fuzz", "epoch", text.epoch, 0, INT64_MAX, &epoch) != SB_OK || epoch != s->epoch) abort();
    if (sb_parse_i64("fuzz", "batch", text.batch_size, 0, INT64_MAX, &batch) != SB_OK || batch != s->batch_size)
        abort();
    if (sb_parse_i64("fuzz", "steps", text.steps, 0, INT64_MAX, &steps) != SB_OK || steps != m.optimizer_steps)
        abort();
    int64_t micro;
    if (sb_parse_i64("fuzz", "micro", text.micro_batch, 0, INT64_MAX, &micro) != SB_OK || micro != m.micro_batch)
        abort();
    sb_safetensors_free(st);
    return 0;
}
