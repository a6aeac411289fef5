/* samebits/elementwise.h - (being written) */
#ifndef SAMEBITS_ELEMENTWISE_H
#define SAMEBITS_ELEMENTWISE_H
#include "samebits/tensor.h"
#endif
