/* bench/gpu/bench_gpu_device.h - what every OpenCL benchmark does first:
 * is there a device that honours the contract, and which one. */
#ifndef SAMEBITS_BENCH_GPU_DEVICE_H
#define SAMEBITS_BENCH_GPU_DEVICE_H

#include <stdio.h>
#include "samebits.h"
#include "opencl/opencl_internal.h"

/* Prints "device <name>" and returns true, or prints "device none: <why>"
 * and returns false (no device is nothing to measure, not a failure). */
static inline bool bench_gpu_device(void) {
    sb_tensor *probe = NULL;
    if (sb_tensor_new_on(&probe, SB_DEVICE_OPENCL, SB_F32, 0, NULL) != SB_OK) {
        printf("device none: %s\n", sb_last_error());
        return false;
    }
    sb_tensor_free(probe);
    printf("device %s\n", sb_ocl_device_name());
    fflush(stdout);
    return true;
}

#endif
