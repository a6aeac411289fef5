/* samebits.h - the whole public API of samebits.
 *
 * samebits computes the same bits on every machine: docs/CONTRACT.md fixes
 * the result of every operation, and every implementation reproduces it.
 * Each concern has its own header under samebits/; this one includes all. */
#ifndef SAMEBITS_H
#define SAMEBITS_H

#define SB_VERSION_STRING "0.1.0"

#include "samebits/status.h"
#include "samebits/tensor.h"
#include "samebits/kernels.h"
#include "samebits/runtime.h"
#include "samebits/math.h"
#include "samebits/random.h"
#include "samebits/hash.h"
#include "samebits/linalg.h"
#include "samebits/conv.h"
#include "samebits/elementwise.h"
#include "samebits/reduce.h"
#include "samebits/index.h"
#include "samebits/loss.h"
#include "samebits/norm.h"
#include "samebits/dropout.h"
#include "samebits/attention.h"
#include "samebits/recurrent.h"
#include "samebits/optim.h"
#include "samebits/io.h"
#include "samebits/autograd.h"
#include "samebits/nn.h"
#include "samebits/trace.h"
#include "samebits/train.h"
#include "samebits/gpt.h"

#endif
