/* Which backend serves which device. The CPU and the mirror test device are
 * built in; optional backends (CUDA) register when their library starts. */
#include <stdatomic.h>
#include "backend/backend.h"
#include "core/internal.h"

enum { DEVICE_SLOTS = 8 };

static _Atomic(const sb_backend *) registered[DEVICE_SLOTS];


const sb_backend *sb_backend_get(const char *fn, sb_device device) {
    if (device == SB_DEVICE_CPU) return &sb_backend_cpu;
    if (device == SB_DEVICE_MIRROR) return sb_backend_mirror_get();
    const sb_backend *be = NULL;
    if ((int)device >= 0 && (int)device < DEVICE_SLOTS) be = atomic_load(&registered[device]);
    if (!be) {
        if ((unsigned)device > (unsigned)SB_DEVICE_MIRROR)
            sb_fail(SB_ERR_DEVICE, "%s: device %d is not a samebits device", fn, (int)device);
        else
            sb_fail(SB_ERR_DEVICE, "%s: the %s device has no backend in this program (%s)", fn,
                    sb_device_name(device),
                    device == SB_DEVICE_CUDA ? "link libsamebits_cuda and call sb_cuda_register"
                                             : "not built");
    }
    return be;
}

void sb_backend_register(sb_device device, const sb_backend *backend) {
    if ((int)device > 0 && (int)device < DEVICE_SLOTS && device != SB_DEVICE_MIRROR)
        atomic_store(&registered[device], backend);
}

sb_status sb_backend_unsupported(const char *fn, const sb_backend *be, const char *op) {
    return sb_fail(SB_ERR_UNSUPPORTED, "%s: the %s device has no %s kernel", fn, be->name, op);
}

bool sb_device_available(sb_device device) {
    if (device == SB_DEVICE_CPU || device == SB_DEVICE_MIRROR) return true;
    return (int)device >= 0 && (int)device < DEVICE_SLOTS && atomic_load(&registered[device]);
}
