/* samebits/dropout.h - (being written) */
#ifndef SAMEBITS_DROPOUT_H
#define SAMEBITS_DROPOUT_H
#include "samebits/tensor.h"
#endif
