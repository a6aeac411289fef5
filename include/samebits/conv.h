/* samebits/conv.h - (being written) */
#ifndef SAMEBITS_CONV_H
#define SAMEBITS_CONV_H
#include "samebits/tensor.h"
#endif
