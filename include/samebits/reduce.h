/* samebits/reduce.h - (being written) */
#ifndef SAMEBITS_REDUCE_H
#define SAMEBITS_REDUCE_H
#include "samebits/tensor.h"
#endif
