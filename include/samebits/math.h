/* samebits/math.h - (being written) */
#ifndef SAMEBITS_MATH_H
#define SAMEBITS_MATH_H
#include "samebits/tensor.h"
#endif
