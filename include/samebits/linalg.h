/* samebits/linalg.h - (being written) */
#ifndef SAMEBITS_LINALG_H
#define SAMEBITS_LINALG_H
#include "samebits/tensor.h"
#endif
