/* samebits/norm.h - (being written) */
#ifndef SAMEBITS_NORM_H
#define SAMEBITS_NORM_H
#include "samebits/tensor.h"
#endif
