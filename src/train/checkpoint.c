/* Checkpoints: a safetensors file holding parameters (plain state_dict
 * names, so other tools can read the weights), "buffer.<name>" and
 * "optimizer.<name>" tensors, and the counters/settings as metadata
 * (checkpoint_meta.c). The
 * file is written atomically by sb_safetensors_write and carries a SHA-256
 * of its data that the reader verifies. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "train/train_internal.h"

typedef struct {
    sb_named *items;
    const char **prefixes;
    size_t count;
} entries;

/* Every tensor a checkpoint holds, in a fixed order, with its file name. */
static sb_status collect(const char *fn, sb_module *model, sb_optimizer *opt, entries *e,
                         char (**names)[160]) {
    size_t np, nb, ns;
    SB_TRY(sb_module_parameters(model, NULL, 0, &np));
    SB_TRY(sb_module_buffers(model, NULL, 0, &nb));
    SB_TRY(sb_optimizer_state(opt, NULL, 0, &ns));
    e->count = np + nb + ns;
    e->items = sb_calloc(fn, e->count, sizeof *e->items);
    *names = sb_calloc(fn, e->count, sizeof **names);
    if (!e->items || !*names) { free(e->items); free(*names); return SB_ERR_NOMEM; }
    SB_TRY(sb_module_parameters(model, e->items, np, &np));
    SB_TRY(sb_module_buffers(model, e->items + np, nb, &nb));
    SB_TRY(sb_optimizer_state(opt, e->items + np + nb, ns, &ns));
    for (size_t i = 0; i < e->count; i++)
        snprintf((*names)[i], sizeof (*names)[i], "%s%s",
                 i < np ? "" : i < np + nb ? "buffer." : "optimizer.", e->items[i].name);
    return SB_OK;
}

sb_status sb_checkpoint_save(const char *path, sb_module *model, sb_optimizer *opt,
                             const sb_train_state *state) {
    return sb_checkpoint_save_micro(path, model, opt, state, 0);
}

sb_status sb_checkpoint_save_micro(const char *path, sb_module *model, sb_optimizer *opt,
                                   const sb_train_state *state, int64_t micro_batch) {
    const char *fn = "sb_checkpoint_save";
    if (!path || !model || !opt || !state) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    entries e = {0};
    char (*names)[160] = NULL;
    SB_TRY(collect(fn, model, opt, &e, &names));
    sb_named_tensor *list = sb_calloc(fn, e.count, sizeof *list);
    sb_status s = list ? SB_OK : SB_ERR_NOMEM;
    for (size_t i = 0; s == SB_OK && i < e.count; i++) {
        list[i].name = names[i];
        list[i].tensor = e.items[i].value;
    }
    sb_checkpoint_meta m = {*state, sb_optimizer_kind(opt), sb_optimizer_steps(opt), micro_batch};
    sb_checkpoint_meta_text text;
    if (s == SB_OK) s = sb_checkpoint_meta_format(fn, &m, &text);
    if (s == SB_OK) s = sb_safetensors_write(path, list, e.count, text.kv, SB_CHECKPOINT_META_COUNT);
    free(list);
    free(names);
    free(e.items);
    return s;
}

static sb_status load_all(const char *fn, const char *path, const sb_safetensors *st,
                          sb_module *model, sb_optimizer *opt, sb_train_state *state, int64_t *micro_batch) {
    sb_checkpoint_meta m;
    SB_TRY(sb_checkpoint_meta_parse(fn, path, st, state->model, sb_optimizer_kind(opt), &m));
    entries e = {0};
    char (*names)[160] = NULL;
    SB_TRY(collect(fn, model, opt, &e, &names));
    sb_status s = SB_OK;
    /* Check everything before changing anything: a refused file leaves the
     * model and optimizer as they were. */
    for (size_t pass = 0; pass < 2 && s == SB_OK; pass++)
        for (size_t i = 0; s == SB_OK && i < e.count; i++) {
            const sb_tensor *t;
            if (sb_safetensors_get(st, names[i], &t) != SB_OK) {
                s = sb_fail(SB_ERR_FORMAT, "%s: %s has no tensor \"%s\" (different model?)", fn, path, names[i]);
            } else if (t->dtype != e.items[i].value->dtype ||
                       sb_check_same_shape(fn, names[i], t, "model tensor", e.items[i].value) != SB_OK) {
                s = sb_fail(SB_ERR_SHAPE, "%s: %s: tensor \"%s\" has another dtype or shape than the model's",
                            fn, path, names[i]);
            } else if (pass == 1) {
                s = sb_tensor_copy(e.items[i].value, t);
            }
        }
    free(names);
    free(e.items);
    if (s != SB_OK) return s;
    sb_optimizer_set_steps(opt, m.optimizer_steps);
    *state = m.state;
    if (micro_batch) *micro_batch = m.micro_batch;
    return SB_OK;
}

sb_status sb_checkpoint_load(const char *path, sb_module *model, sb_optimizer *opt,
                             sb_train_state *state) {
    return sb_checkpoint_load_micro(path, model, opt, state, NULL);
}

sb_status sb_checkpoint_load_micro(const char *path, sb_module *model, sb_optimizer *opt,
                                   sb_train_state *state, int64_t *micro_batch) {
    SB_FPENV_GUARD();
    const char *fn = "sb_checkpoint_load";
    if (!path || !model || !opt || !state) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    sb_safetensors *st;
    SB_TRY(sb_safetensors_read(path, &st));
    sb_status s = load_all(fn, path, st, model, opt, state, micro_batch);
    sb_safetensors_free(st);
    return s;
}
