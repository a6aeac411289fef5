/* samebits/loss.h - (being written) */
#ifndef SAMEBITS_LOSS_H
#define SAMEBITS_LOSS_H
#include "samebits/tensor.h"
#endif
