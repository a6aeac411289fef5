/* Which backend serves which device. The CPU and the mirror test device are
 * built in; the OpenCL device is built in when the build has OpenCL
 * (SB_HAVE_OPENCL) and opens its device on first use; optional backends
 * (CUDA) register when their library starts. */
#include <stdatomic.h>
#include "backend/backend.h"
#include "core/internal.h"
#ifdef SB_HAVE_OPENCL
#include "opencl/opencl_internal.h"
#endif

enum { DEVICE_SLOTS = 8 };

static _Atomic(const sb_backend *) registered[DEVICE_SLOTS];

static const char *how_to_get(sb_device device) {
    switch (device) {
    case SB_DEVICE_CUDA: return "link libsamebits_cuda and call sb_cuda_register";
    case SB_DEVICE_OPENCL:
        return "this library was built without OpenCL: install the OpenCL headers "
               "(Debian: ocl-icd-opencl-dev) and rebuild, or build with SB_OPENCL=1";
    default: return "not built";
    }
}

const sb_backend *sb_backend_get(const char *fn, sb_device device) {
    if (device == SB_DEVICE_CPU) return &sb_backend_cpu;
    if (device == SB_DEVICE_MIRROR) return sb_backend_mirror_get();
#ifdef SB_HAVE_OPENCL
    if (device == SB_DEVICE_OPENCL) return sb_opencl_backend_get(fn);
#endif
    const sb_backend *be = NULL;
    if ((int)device >= 0 && (int)device < DEVICE_SLOTS) be = atomic_load(&registered[device]);
    if (!be) {
        if ((unsigned)device > (unsigned)SB_DEVICE_OPENCL)
            sb_fail(SB_ERR_DEVICE, "%s: device %d is not a samebits device", fn, (int)device);
        else
            sb_fail(SB_ERR_DEVICE, "%s: the %s device has no backend in this program (%s)", fn,
                    sb_device_name(device), how_to_get(device));
    }
    return be;
}

void sb_backend_register(sb_device device, const sb_backend *backend) {
    if ((int)device > 0 && (int)device < DEVICE_SLOTS && device != SB_DEVICE_MIRROR &&
        device != SB_DEVICE_OPENCL)
        atomic_store(&registered[device], backend);
}

sb_status sb_backend_unsupported(const char *fn, const sb_backend *be, const char *op) {
    return sb_fail(SB_ERR_UNSUPPORTED, "%s: the %s device has no %s kernel", fn, be->name, op);
}

bool sb_device_available(sb_device device) {
    if (device == SB_DEVICE_CPU || device == SB_DEVICE_MIRROR) return true;
#ifdef SB_HAVE_OPENCL
    if (device == SB_DEVICE_OPENCL) return sb_opencl_available();
#endif
    return (int)device >= 0 && (int)device < DEVICE_SLOTS && atomic_load(&registered[device]);
}
