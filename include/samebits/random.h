/* samebits/random.h - (being written) */
#ifndef SAMEBITS_RANDOM_H
#define SAMEBITS_RANDOM_H
#include "samebits/tensor.h"
#endif
