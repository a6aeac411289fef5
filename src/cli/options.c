/* Table-driven option parsing for the subcommands (see options.h). */
#include <stdbool.h>
#include <string.h>
#include "cli/options.h"
#include "io/io_internal.h"

static sb_status parse_value(const char *cmd, const sb_cli_option *o, const char *v) {
    switch (o->kind) {
    case SB_CLI_TEXT:
        if (!*v) return sb_fail(SB_ERR_ARG, "%s: %s needs a non-empty value", cmd, o->name);
        *(const char **)o->dest = v;
        return SB_OK;
    case SB_CLI_I64:
        return sb_parse_i64(cmd, o->name, v, o->imin, o->imax, (int64_t *)o->dest);
    case SB_CLI_U64:
        return sb_parse_u64(cmd, o->name, v, o->umin, o->umax, (uint64_t *)o->dest);
    case SB_CLI_REAL:
        return sb_parse_real(cmd, o->name, v, o->rmin, o->rmax, (double *)o->dest);
    case SB_CLI_FLAG:
        break;
    }
    return sb_fail(SB_ERR_ARG, "%s: %s takes no value", cmd, o->name);
}

sb_status sb_cli_parse_options(const char *cmd, const sb_cli_option *opts, size_t n_opts, int argc,
                               char **argv) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const sb_cli_option *o = NULL;
        for (size_t k = 0; k < n_opts && !o; k++)
            if (!strcmp(a, opts[k].name)) o = &opts[k];
        if (!o) return sb_fail(SB_ERR_ARG, "%s: unknown option '%.60s'", cmd, a);
        if (o->kind == SB_CLI_FLAG) {
            *(bool *)o->dest = true;
            continue;
        }
        if (i + 1 >= argc) return sb_fail(SB_ERR_ARG, "%s: %s needs a value", cmd, o->name);
        SB_TRY(parse_value(cmd, o, argv[++i]));
    }
    return SB_OK;
}
