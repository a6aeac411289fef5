/* `samebits verify`: a self-check a user runs on a new machine.
 *
 * It replays the committed op test vectors (tests/vectors/ops.txt, embedded
 * in the binary as src/cli/verify_vectors.c) through the public ops at this
 * machine's default instruction set and thread count, compares the SHA-256
 * of every output with the expectation, and prints one PASS/FAIL line per
 * output and a verdict. Each vector line names an op, a Philox seed and the
 * op's shapes/parameters; the inputs are generated from the seed, so the
 * file holds no data, only hashes (format: docs/VERIFY-AND-TRACE.md).
 *
 * The expectations come from the reference path: `samebits verify
 * --generate` runs the same cases with the scalar (reference) kernels on one
 * thread and prints the file. The contract says every instruction set and
 * thread count gives the same bits, so a mismatch here is a bug (or a
 * broken toolchain/CPU) on this machine.
 *
 * This file is the driver (options, --generate, running the cases at each
 * configuration, the verdict); the runners are verify_runners.c, the vector
 * file verify_file.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/verify_internal.h"
#include "io/io_internal.h"

extern const char sb_verify_vectors_text[];

/* ---- the cases `--generate` writes ----------------------------------------- */
typedef struct { const char *op; uint64_t seed; bool quick; const char *params; } spec;
static const spec specs[] = {
    /* GEMM family: every transpose, odd sizes, > 32, batched and shared operands */
    {"matmul", 1, true, "a=5x7,b=7x3"},
    {"matmul", 2, true, "a=7x5,b=7x3,ta=1"},
    {"matmul", 3, true, "a=5x7,b=3x7,tb=1,adv=16"},
    {"matmul", 4, false, "a=37x33,b=37x65,ta=1,tb=0"},
    {"matmul", 5, false, "a=33x37,b=65x37,ta=0,tb=1,adv=64"},
    {"matmul", 6, false, "a=37x33,b=65x37,ta=1,tb=1"},
    {"matmul", 7, true, "a=3x4x6,b=3x6x5"},
    {"matmul", 8, false, "a=3x17x9,b=9x13,adv=32"},
    {"matmul", 9, false, "a=70x300,b=300x66"},
    {"sgemm", 10, true, "m=3,n=5,k=9,pad=3"},
    {"sgemm", 11, false, "m=67,n=35,k=129,ta=1,tb=1,pad=1"},
    {"linear", 12, true, "x=4x9,w=5x9"},
    {"linear", 13, false, "x=2x3x40,w=33x40,adv=50"},
    {"linear", 14, false, "x=100x400,w=120x400"},
    {"linear", 15, true, "x=1x1,w=1x1,bias=0"},
    /* conv2d: stride, padding, dilation, groups, 1x1, odd sizes */
    {"conv2d", 16, true, "x=2x3x7x6,w=4x3x3x3"},
    {"conv2d", 17, true, "x=2x4x9x7,w=6x2x3x3,stride=2x1,pad=1x0,dil=1x2,groups=2"},
    {"conv2d", 18, false, "x=3x6x11x13,w=6x1x3x5,stride=2x2,pad=2x1,groups=6,adv=40"},
    {"conv2d", 19, false, "x=4x1x28x28,w=6x1x5x5,pad=2x2"},
    {"conv2d", 20, false, "x=4x6x14x14,w=16x6x5x5,bias=0"},
    {"conv2d", 21, true, "x=1x5x4x4,w=7x5x1x1,stride=3x3"},
    {"conv2d", 22, false, "x=2x8x10x10,w=12x4x3x3,dil=2x3,pad=3x3,groups=2,adv=20"},
    /* pooling */
    {"max_pool2d", 23, true, "x=2x3x7x7,kernel=2x2"},
    {"max_pool2d", 24, true, "x=2x3x9x8,kernel=3x2,stride=2x1,pad=1x1,ceil=1,adv=8"},
    {"max_pool2d", 25, false, "x=4x6x28x28,kernel=2x2"},
    {"avg_pool2d", 26, true, "x=2x3x7x7,kernel=3x3,stride=2x2,pad=1x1"},
    {"avg_pool2d", 27, false, "x=2x3x9x8,kernel=3x2,stride=2x1,pad=1x1,ceil=1,cip=0,adv=8"},
    {"adaptive_max_pool2d", 120, true, "x=2x3x7x5,out=3x4,adv=8"},
    {"adaptive_max_pool2d", 121, false, "x=2x4x10x9,out=4x3"},
    {"adaptive_avg_pool2d", 122, true, "x=2x3x7x5,out=3x4,adv=8"},
    {"adaptive_avg_pool2d", 123, false, "x=2x4x14x14,out=5x1"},
    {"max_pool2d", 128, true, "x=2x3x11x9,kernel=3x2,stride=1x2,pad=1x1,dilation=2x3,ceil=1,adv=8"},
    {"avg_pool2d", 129, true, "x=2x3x9x8,kernel=3x3,stride=2x2,pad=1x1,ceil=1,divisor=-7,adv=8"},
    {"pad2d", 130, true, "x=2x3x5x7,lr=3x2,tb=1x4,mode=reflect,adv=8"},
    {"pad2d", 131, true, "x=2x3x5x4,lr=4x4,tb=3x2,mode=replicate,adv=8"},
    {"pad2d", 132, true, "x=1x2x4x6,lr=6x5,tb=4x4,mode=circular,adv=8"},
    {"pad2d", 133, false, "x=3x4x9x9,lr=1x2,tb=2x1,mode=constant,value=-0.5"},
    {"interpolate", 270, true, "x=2x3x7,out=13,mode=nearest,scale=2,adv=8"},
    {"interpolate", 271, true, "x=2x3x5x6,out=11x9,mode=nearest-exact,adv=8"},
    {"interpolate", 272, true, "x=2x3x9,out=4,mode=linear,align=1,adv=8"},
    {"interpolate", 273, true, "x=2x3x5x4,out=9x11,mode=linear,adv=8"},
    {"interpolate", 274, true, "x=1x2x3x4x5,out=7x10x12,mode=linear,scale=2.5"},
    {"interpolate", 275, true, "x=2x3x6x5,out=13x12,mode=cubic,align=1,adv=8"},
    {"interpolate", 276, false, "x=2x4x16x16,out=40x40,mode=cubic,scale=2.5"},
    {"grid_sample", 277, true, "x=2x3x5x6,out=4x7,mode=bilinear,padding=zeros,adv=8"},
    {"grid_sample", 278, true, "x=2x2x6x5,out=5x5,mode=bilinear,padding=border,align=1"},
    {"grid_sample", 279, true, "x=1x3x4x7,out=6x3,mode=bilinear,padding=reflection,adv=8"},
    {"grid_sample", 280, true, "x=2x3x5x5,out=4x4,mode=nearest,padding=reflection,align=1"},
    {"grid_sample", 281, false, "x=2x4x16x16,out=24x24,mode=bilinear,padding=zeros,align=1"},
    /* elementwise */
    {"binary", 28, true, "op=add,a=3x4x5,b=4x1,adv=6"},
    {"binary", 29, true, "op=sub,a=3x4x5,b=5,adv=6"},
    {"binary", 30, true, "op=mul,a=2x33,b=2x33,adv=6"},
    {"binary", 31, true, "op=div,a=70,b=70,adv=6"},
    {"binary", 32, true, "op=maximum,a=3x1x5,b=4x1,adv=4"},
    {"binary", 33, true, "op=minimum,a=9x9,b=9x9,adv=4"},
    {"binary", 34, false, "op=add,a=9000,b=9000,adv=50"},
    {"unary", 35, true, "op=neg,x=65,adv=5"},
    {"unary", 36, true, "op=abs,x=65,adv=5"},
    {"unary", 37, true, "op=sqrt,x=65,adv=5"},
    {"unary", 38, true, "op=exp,x=99,adv=5,scale=30"},
    {"unary", 39, true, "op=log,x=99,adv=5,scale=10"},
    {"unary", 40, true, "op=square,x=65,adv=5"},
    {"unary", 41, true, "op=reciprocal,x=65,adv=5"},
    {"unary", 42, false, "op=exp,x=10007,adv=100,scale=40"},
    {"unary", 184, true, "op=sin,x=99,adv=5,scale=1000"},
    {"unary", 185, true, "op=cos,x=99,adv=5,scale=1000"},
    {"unary", 186, true, "op=exp2,x=99,adv=5,scale=40"},
    {"unary", 187, true, "op=log2,x=99,adv=5,scale=10"},
    {"unary", 188, true, "op=rsqrt,x=99,adv=5,scale=10"},
    /* activations */
    {"activation", 43, true, "fn=relu,x=3x37,adv=5"},
    {"activation", 44, true, "fn=leaky_relu,x=3x37,slope=0.2,adv=5"},
    {"activation", 45, true, "fn=tanh,x=3x37,adv=5,scale=4"},
    {"activation", 46, true, "fn=sigmoid,x=3x37,adv=5,scale=8"},
    {"activation", 47, true, "fn=silu,x=3x37,adv=5,scale=4"},
    {"activation", 48, true, "fn=gelu,x=3x37,adv=5,scale=3"},
    {"activation", 49, true, "fn=gelu_tanh,x=3x37,adv=5,scale=3"},
    {"activation", 50, true, "fn=softplus,x=3x37,beta=2,threshold=10,adv=5,scale=6"},
    {"activation", 124, true, "fn=hardtanh,x=3x37,min=-2,max=1.5,adv=5,scale=3"},
    {"activation", 125, true, "fn=hardtanh,x=5x29,min=0,max=6,adv=5,scale=5"},
    {"activation", 126, true, "fn=hardsigmoid,x=3x37,adv=5,scale=4"},
    {"activation", 127, true, "fn=hardswish,x=3x37,adv=5,scale=4"},
    {"activation", 176, true, "fn=elu,x=3x37,alpha=1.5,adv=5,scale=6"},
    {"activation", 177, true, "fn=elu,x=3x37,alpha=1.6732632423543772,elu_scale=1.0507009873554805,adv=5,scale=6"},
    {"activation", 178, true, "fn=elu,x=3x37,alpha=2,input_scale=0.5,adv=5,scale=6"},
    {"activation", 179, true, "fn=mish,x=3x37,adv=5,scale=8"},
    {"activation", 180, true, "fn=logsigmoid,x=3x37,adv=5,scale=8"},
    {"activation", 181, true, "fn=hardshrink,x=3x37,lambd=0.5,adv=5,scale=2"},
    {"activation", 182, true, "fn=softshrink,x=3x37,lambd=0.5,adv=5,scale=2"},
    {"activation", 183, true, "fn=threshold,x=3x37,threshold=0.25,value=-2,adv=5,scale=2"},
    {"prelu", 520, true, "x=3x4x5x3,adv=6"},
    {"prelu", 521, true, "x=5x7,shared=1,adv=6"},
    {"prelu", 522, false, "x=2x3x90x50,adv=50"},
    {"activation", 51, false, "fn=gelu,x=9001,adv=100,scale=5"},
    {"activation", 52, false, "fn=tanh,x=9001,adv=100,scale=10"},
    /* reductions, incl. > 8192 elements for the canonical sum's blocks */
    {"reduce", 53, true, "fn=sum,x=3x4x5,dims=2,adv=10"},
    {"reduce", 54, true, "fn=mean,x=3x4x5,dims=5,keepdim=1"},
    {"reduce", 55, true, "fn=var,x=6x7,dims=1,correction=1"},
    {"reduce", 56, true, "fn=std,x=6x7,dims=2,correction=0"},
    {"reduce", 57, true, "fn=max,x=5x6x7,dims=2,adv=8"},
    {"reduce", 58, true, "fn=min,x=5x6x7,dims=4,keepdim=1,adv=8"},
    {"reduce", 59, false, "fn=sum,x=20000,adv=500,scale=1000"},
    {"reduce", 60, false, "fn=mean,x=3x9000,dims=2"},
    {"reduce", 61, false, "fn=var,x=9000x3,dims=1,correction=1,shift=1000"},
    {"reduce", 62, false, "fn=max,x=10000"},
    {"cumulative", 523, true, "fn=cumsum,x=3x4x5,dim=1,adv=8"},
    {"cumulative", 524, true, "fn=cumsum,x=4x33,dim=-1,adv=8,scale=100"},
    {"cumulative", 525, true, "fn=cumprod,x=3x4x5,dim=2,adv=8"},
    {"cumulative", 526, true, "fn=cumprod,x=17x3,dim=0,adv=6"},
    {"cumulative", 527, false, "fn=cumsum,x=3x10000,dim=1,scale=10"},
    /* softmax and losses */
    {"softmax", 63, true, "x=4x10,adv=12,scale=10"},
    {"softmax", 64, false, "x=3x40x5,dim=1,scale=30"},
    {"log_softmax", 65, true, "x=4x10,adv=12,scale=10"},
    {"log_softmax", 66, false, "x=2x9000,scale=50"},
    {"cross_entropy", 67, true, "x=8x10,reduction=1"},
    {"cross_entropy", 68, true, "x=7x5,reduction=0,smoothing=0.1,ignore=2"},
    {"cross_entropy", 69, false, "x=100x10,reduction=2,scale=20"},
    {"nll_loss", 70, true, "x=8x10,reduction=1,ignore=4"},
    {"nll_loss", 71, false, "x=33x7,reduction=0"},
    {"class_loss", 430, true, "x=6x5,reduction=1,kind=ce,w=1,ignore=2"},
    {"class_loss", 431, true, "x=3x4x2x5,reduction=0,kind=ce,smoothing=0.1,w=1,ignore=1,adv=10"},
    {"class_loss", 432, true, "x=4x6x7,reduction=1,kind=ce,smoothing=0.2"},
    {"class_loss", 433, true, "x=2x5x3x3,reduction=2,kind=nll,w=1,ignore=0"},
    {"class_loss", 434, false, "x=3x10x3000,reduction=1,kind=ce,smoothing=0.05,w=1,scale=8"},
    {"ctc_loss", 435, true, "x=12x3x5,reduction=0,s=4"},
    {"ctc_loss", 436, true, "x=9x4x6,reduction=1,s=3,blank=2,concat=1"},
    {"ctc_loss", 437, true, "x=5x3x4,reduction=2,s=4,zero_inf=1"},
    {"ctc_loss", 438, false, "x=200x16x30,reduction=1,s=40,scale=3"},
    {"mse", 72, true, "x=3x11,reduction=1,adv=10"},
    {"mse", 73, true, "x=3x11,reduction=0"},
    {"mse", 74, false, "x=10000,reduction=2"},
    {"elementwise_loss", 155, true, "x=3x11,reduction=1,kind=l1,adv=10"},
    {"elementwise_loss", 156, true, "x=3x11,reduction=0,kind=smooth_l1,beta=0.5,w=1"},
    {"elementwise_loss", 157, true, "x=3x11,reduction=2,kind=smooth_l1,beta=0"},
    {"elementwise_loss", 158, true, "x=3x11,reduction=1,kind=huber,beta=0.7,adv=10"},
    {"elementwise_loss", 159, true, "x=4x9,reduction=1,kind=bce,w=1"},
    {"elementwise_loss", 160, true, "x=4x9,reduction=0,kind=bce_with_logits,scale=4"},
    {"elementwise_loss", 161, true, "x=4x9,reduction=1,kind=bce_with_logits,w=1,pw=1,adv=10"},
    {"elementwise_loss", 162, true, "x=4x9,reduction=2,kind=kl_div"},
    {"elementwise_loss", 163, true, "x=4x9,reduction=1,kind=kl_div,log_target=1"},
    {"elementwise_loss", 164, false, "x=10000,reduction=1,kind=bce_with_logits,pw=1"},
    /* normalisation */
    {"batch_norm", 75, true, "x=4x3x5x5"},
    {"batch_norm", 76, true, "x=6x5,training=0"},
    {"batch_norm", 77, false, "x=8x6x14x14,shift=100,momentum=0.2"},
    {"layer_norm", 78, true, "x=4x10"},
    {"layer_norm", 79, false, "x=3x5x40,normalized=2,shift=-50,eps=0.001"},
    {"rms_norm", 400, true, "x=4x10"},
    {"rms_norm", 401, true, "x=3x7,affine=0,eps=0.001"},
    {"rms_norm", 402, false, "x=3x5x40,normalized=2,shift=-50"},
    {"group_norm", 150, true, "x=3x6x4x5,groups=2"},
    {"group_norm", 151, true, "x=2x4x3,groups=4,eps=0.001"},
    {"group_norm", 152, false, "x=4x32x9x9,groups=8,shift=-50"},
    {"dropout", 80, true, "x=5x13,p=0.3,offset=17"},
    {"dropout", 81, false, "x=10000,p=0.5,offset=123456789"},
    /* the index family: scatter_reduce, selection, counting (section 18) */
    {"scatter_reduce", 600, true, "x=4x9,dim=1,len=3,reduce=sum,adv=4,scale=1000"},
    {"scatter_reduce", 601, true, "x=7x3x2,dim=0,len=4,reduce=prod,self=0,adv=8"},
    {"scatter_reduce", 602, true, "x=3x20,dim=1,len=5,reduce=mean,adv=6"},
    {"scatter_reduce", 603, true, "x=2x5x6,dim=2,len=2,reduce=amax,self=0,adv=3"},
    {"scatter_reduce", 604, true, "x=9x4,dim=0,len=3,reduce=amin,adv=3"},
    {"scatter_reduce", 605, false, "x=64x2000,dim=1,len=37,reduce=mean,self=0,scale=100"},
    {"sort", 606, true, "x=5x9,dim=1,fn=sort,adv=3"},
    {"sort", 607, true, "x=8x3x4,dim=0,fn=sort,flag=1,adv=3"},
    {"sort", 608, true, "x=6x11,dim=1,fn=topk,k=4,flag=1,adv=4"},
    {"sort", 609, true, "x=6x11,dim=0,fn=topk,k=2,adv=4"},
    {"sort", 610, true, "x=5x7x3,dim=1,fn=kthvalue,k=3,adv=3"},
    {"sort", 611, true, "x=4x10,dim=1,fn=median,adv=5"},
    {"sort", 612, false, "x=200x300,dim=1,fn=sort,flag=1,adv=7"},
    {"histogram", 613, true, "x=200,fn=bincount,bins=9,adv=5,scale=100"},
    {"histogram", 614, true, "x=5x40,fn=histc,bins=7,lo=-1.5,hi=2,adv=9"},
    {"histogram", 615, true, "x=3x30,fn=histc,bins=16,adv=0"},
    {"histogram", 616, false, "x=20000,fn=bincount,bins=1000,scale=10"},
    /* attention */
    {"sdpa", 528, true, "q=2x2x5x4,lk=5,ev=3,mask=none,adv=8"},
    {"sdpa", 529, true, "q=1x3x4x8,lk=6,ev=8,mask=float,causal=2"},
    {"sdpa", 530, true, "q=2x1x7x4,lk=7,ev=5,mask=bool,causal=1,attn_scale=0.75"},
    {"sdpa", 531, true, "q=1x2x3x4,lk=9,ev=4,mask=none,p=0.25,offset=11"},
    {"sdpa", 532, false, "q=2x4x40x16,lk=40,ev=16,mask=none,causal=1,scale=3"},
    /* optimizers */
    {"sgd", 82, true, "x=37,steps=3,momentum=0.9,wd=0.01"},
    {"sgd", 83, false, "x=100,steps=4,momentum=0.5,nesterov=1,maximize=0"},
    {"adam", 84, true, "x=37,steps=3"},
    {"adam", 85, false, "x=100,steps=5,amsgrad=1,wd=0.1"},
    {"adam", 86, false, "x=100,steps=5,decoupled=1,wd=0.01"},
    /* random numbers */
    {"rng", 87, true, "n=100,index=0"},
    {"rng", 88, false, "n=10000,index=72057594037917000"},
    /* correctly rounded functions: hard inputs and a Philox sweep */
    {"math", 89, true, "fn=expf,hard=1"},
    {"math", 90, true, "fn=expm1f,hard=1"},
    {"math", 91, true, "fn=logf,hard=1"},
    {"math", 92, true, "fn=log1pf,hard=1"},
    {"math", 93, true, "fn=tanhf,hard=1"},
    {"math", 94, true, "fn=erff,hard=1"},
    {"math", 95, true, "fn=expf,n=2000"},
    {"math", 96, true, "fn=expm1f,n=2000"},
    {"math", 97, true, "fn=logf,n=2000"},
    {"math", 98, true, "fn=log1pf,n=2000"},
    {"math", 99, true, "fn=tanhf,n=2000"},
    {"math", 100, true, "fn=erff,n=2000"},
    {"math", 101, false, "fn=expf,n=200000"},
    {"math", 102, false, "fn=expm1f,n=200000"},
    {"math", 103, false, "fn=logf,n=200000"},
    {"math", 104, false, "fn=log1pf,n=200000"},
    {"math", 105, false, "fn=tanhf,n=200000"},
    {"math", 106, false, "fn=erff,n=200000"},
    {"math", 89, true, "fn=exp2f,hard=1"},
    {"math", 90, true, "fn=log2f,hard=1"},
    {"math", 95, true, "fn=exp2f,n=2000"},
    {"math", 96, true, "fn=log2f,n=2000"},
    {"math", 101, false, "fn=exp2f,n=200000"},
    {"math", 102, false, "fn=log2f,n=200000"},
    {"math", 91, true, "fn=sinf,hard=1"},
    {"math", 92, true, "fn=cosf,hard=1"},
    {"math", 97, true, "fn=sinf,n=2000"},
    {"math", 98, true, "fn=cosf,n=2000"},
    {"math", 103, false, "fn=sinf,n=200000"},
    {"math", 104, false, "fn=cosf,n=200000"},
    {"powf", 153, true, "n=2000"},
    {"powf", 154, false, "n=200000"},
    /* the canonical sum over more than 8192 elements */
    {"ssum", 107, true, "n=9000,inc=1,adv=300,scale=1000"},
    {"ssum", 108, false, "n=100000,inc=3"},
    {"ssum", 109, true, "n=8193,inc=2,shift=1e6"},
    /* autograd: every sb_ag_* op in one graph, forward and backward */
    {"autograd", 112, true, "n=2,c=3,hw=8"},
    {"autograd", 113, false, "n=5,c=2,hw=11,scale=3"},
    /* whole training steps through autograd */
    {"train_lenet5", 110, true, "steps=2,batch=3"},
    {"train_lenet5", 111, false, "steps=3,batch=32"},
    {"train_fmnist", 0, false, "steps=2,batch=100"},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

static int generate(const char *data_dir) {
    /* The reference path: portable scalar kernels on one thread. */
    if (sb_set_isa(SB_ISA_SCALAR) != SB_OK || sb_set_num_threads(1) != SB_OK) {
        fprintf(stderr, "samebits verify: cannot select the reference path: %s\n", sb_last_error());
        return 1;
    }
    sb_arena *arena;
    if (sb_arena_new(&arena, (size_t)4 << 20) != SB_OK) return 1;
    printf("# samebits op test vectors (docs/VERIFY-AND-TRACE.md).\n"
           "# Generated from the reference path (scalar kernels, one thread) by\n"
           "#   samebits verify --generate > tests/vectors/ops.txt\n"
           "#   samebits verify --emit-c tests/vectors/ops.txt > src/cli/verify_vectors.c\n"
           "# Each line: OP SEED quick|full PARAMS OUTPUT=SHA256...\n");
    int rc = 0;
    for (size_t i = 0; i < N_SPECS && !rc; i++) {
        vcase c;
        memset(&c, 0, sizeof c);
        snprintf(c.op, sizeof c.op, "%s", specs[i].op);
        c.seed = specs[i].seed;
        c.quick = specs[i].quick;
        snprintf(c.params, sizeof c.params, "%s", specs[i].params);
        run_ctx r;
        if (sb_verify_run_case(&c, &r, arena, data_dir, (size_t)DEFAULT_MAX_MIB << 20) != SB_OK) {
            fprintf(stderr, "samebits verify: generating %s %s failed: %s\n", c.op, c.params, sb_last_error());
            rc = 1;
        } else if (r.skipped) {
            fprintf(stderr, "samebits verify: cannot generate %s: %s\n", c.op, r.skip_why);
            rc = 1;
        } else {
            sb_verify_print_line(&c, &r, stdout);
        }
    }
    sb_arena_free(arena);
    return rc;
}

static void describe(const vcase *c, const char *out_name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s (%s%sseed %" PRIu64 ")", c->op, out_name, c->params, c->params[0] ? ", " : "",
             c->seed);
}

typedef struct {
    int checked, passed, skipped;
    char failed[1024]; /* "op.output, ..." for the verdict, cut with "..." */
    size_t len;
} tally;

static void add_failure(tally *t, const char *name, const char *config) {
    char item[160];
    int n = snprintf(item, sizeof item, "%s%s%s%s", t->len ? ", " : "", name, config ? "@" : "", config ? config : "");
    if (n < 0) return;
    if (t->len + (size_t)n + 6 < sizeof t->failed) {
        memcpy(t->failed + t->len, item, (size_t)n + 1);
        t->len += (size_t)n;
    } else if (t->len < sizeof t->failed) {
        memcpy(t->failed + t->len, ", ...", 6);
        t->len = sizeof t->failed; /* full: add nothing more */
    }
}

/* How a vector file is run: where from (for messages), the Fashion-MNIST
 * directory, the memory budget of one vector. */
typedef struct {
    const char *src, *data;
    size_t max_bytes;
} run_opts;

/* Runs the cases at the current ISA and thread count; prints FAIL and SKIP
 * lines, PASS lines too when print_pass. config (e.g. "avx2/1") tags failures.
 * Returns false, with a message, at a vector the file may not contain. */
static bool run_cases(const vcase *cases, int count, bool quick, const run_opts *o, sb_arena *arena,
                      bool print_pass, const char *config, tally *t) {
    for (int i = 0; i < count; i++) {
        const vcase *c = &cases[i];
        if (quick && !c->quick) continue;
        char desc[512], name[80];
        run_ctx r;
        sb_status s = sb_verify_run_case(c, &r, arena, o->data, o->max_bytes);
        if (s != SB_OK && r.refused) {
            fflush(stdout);
            fprintf(stderr, "samebits verify: %s:%d: %s\n", o->src, c->lineno, sb_last_error());
            return false;
        }
        if (s == SB_OK && r.skipped) {
            describe(c, "*", desc, sizeof desc);
            if (print_pass) printf("SKIP  %s: %s\n", desc, r.skip_why);
            t->skipped++;
            continue;
        }
        for (int k = 0; k < c->n_out; k++) {
            describe(c, c->out_name[k], desc, sizeof desc);
            t->checked++;
            bool produced = s == SB_OK && k < r.n_out && !strcmp(r.out_name[k], c->out_name[k]);
            if (produced && !memcmp(r.out_hash[k], c->out_hash[k], 32)) {
                t->passed++;
                if (print_pass) printf("PASS  %s\n", desc);
                continue;
            }
            if (config) printf("[%s] ", config);
            if (s != SB_OK) {
                printf("FAIL  %s: %s\n", desc, sb_last_error());
            } else if (!produced) {
                printf("FAIL  %s: the op did not produce this output\n", desc);
            } else {
                char got[65], want[65];
                sb_hex_digest(r.out_hash[k], got);
                sb_hex_digest(c->out_hash[k], want);
                printf("FAIL  %s: got %s, expected %s\n", desc, got, want);
            }
            snprintf(name, sizeof name, "%s.%s", c->op, c->out_name[k]);
            add_failure(t, name, config);
        }
        if (s == SB_OK && r.n_out != c->n_out) {
            printf("%s%s%sFAIL  %s.*: produced %d outputs, the vectors list %d\n", config ? "[" : "",
                   config ? config : "", config ? "] " : "", c->op, r.n_out, c->n_out);
            t->checked++;
            snprintf(name, sizeof name, "%s (output count)", c->op);
            add_failure(t, name, config);
        }
    }
    return true;
}

static int usage_error(const char *a) {
    fprintf(stderr, "samebits verify: unknown or incomplete option '%s'\n"
            "usage: samebits verify [--quick] [--vectors FILE] [--data DIR] [--list]\n"
            "                       [--isa NAME] [--threads N] [--all-isa] [--max-memory MIB]\n"
            "       samebits verify --generate [--data DIR]   (print vectors from the reference path)\n"
            "       samebits verify --emit-c FILE              (C source embedding FILE)\n"
            "       samebits verify --print-vectors            (the embedded vectors)\n", a);
    return 2;
}

static int option_error(void) {
    fprintf(stderr, "%s\n", sb_last_error());
    return 2;
}

int sb_cli_verify(int argc, char **argv) {
    const char *vectors = NULL, *data = "/usr/share/datasets/fashion-mnist", *isa = NULL;
    bool quick = false, list = false, all_isa = false;
    int64_t threads = 0, max_mib = DEFAULT_MAX_MIB;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) quick = true;
        else if (!strcmp(a, "--list")) list = true;
        else if (!strcmp(a, "--all-isa")) all_isa = true;
        else if (!strcmp(a, "--vectors") && i + 1 < argc) vectors = argv[++i];
        else if (!strcmp(a, "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(a, "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(a, "--threads") && i + 1 < argc) {
            if (sb_parse_i64("samebits verify", a, argv[++i], 1, SB_MAX_THREADS, &threads) != SB_OK)
                return option_error();
        }
        else if (!strcmp(a, "--max-memory") && i + 1 < argc) {
            /* at most 2^40 MiB, so the byte count fits in 64 bits */
            if (sb_parse_i64("samebits verify", a, argv[++i], 1, INT64_C(1) << 40, &max_mib) != SB_OK)
                return option_error();
        }
        else if (!strcmp(a, "--generate") && argc == 1) return generate(data);
        else if (!strcmp(a, "--generate") && argc == 3 && !strcmp(argv[1], "--data")) return generate(argv[2]);
        else if (!strcmp(a, "--emit-c") && argc == 2) return sb_verify_emit_c(argv[1]);
        else if (!strcmp(a, "--print-vectors") && argc == 1) { fputs(sb_verify_vectors_text, stdout); return 0; }
        else return usage_error(a);
    }
    if (isa) {
        sb_isa_level level;
        if (sb_isa_from_name(isa, &level) != SB_OK || sb_set_isa(level) != SB_OK) {
            fprintf(stderr, "samebits verify: --isa %s: %s\n", isa, sb_last_error());
            return 2;
        }
    }
    if (threads && sb_set_num_threads((int)threads) != SB_OK) return usage_error("--threads");
    char *text = vectors ? sb_verify_read_file(vectors) : NULL;
    if (vectors && !text) return 2;
    vcase *cases;
    int count;
    if (!sb_verify_parse_vectors(text ? text : sb_verify_vectors_text, vectors ? vectors : "(built-in vectors)", &cases, &count)) {
        free(text);
        return 2;
    }
    free(text);
    if (list) {
        for (int i = 0; i < count; i++)
            for (int k = 0; k < cases[i].n_out && (!quick || cases[i].quick); k++) {
                char desc[512];
                describe(&cases[i], cases[i].out_name[k], desc, sizeof desc);
                printf("%s\n", desc);
            }
        free(cases);
        return 0;
    }
    sb_arena *arena;
    if (sb_arena_new(&arena, (size_t)4 << 20) != SB_OK) { free(cases); return 2; }
    tally t;
    memset(&t, 0, sizeof t);
    const char *src = vectors ? vectors : "built-in";
    run_opts opts = {vectors ? vectors : "(built-in vectors)", data, (size_t)max_mib << 20};
    bool refused = false;
    if (!all_isa) {
        printf("samebits %s verify: %s, %d thread%s, %s vectors%s\n", SB_VERSION_STRING, sb_isa_name(sb_isa()),
               sb_num_threads(), sb_num_threads() == 1 ? "" : "s", src, quick ? " (--quick subset)" : "");
        if (!run_cases(cases, count, quick, &opts, arena, true, NULL, &t)) refused = true;
    } else {
        /* Every instruction set this machine runs, on one thread and on the
         * default (or --threads) count: the contract says all agree. */
        printf("samebits %s verify --all-isa: %s vectors%s\n", SB_VERSION_STRING, src,
               quick ? " (--quick subset)" : "");
        sb_isa_level saved = sb_isa();
        int counts[2] = {1, sb_num_threads()};
        for (int level = 0; level < SB_ISA_COUNT; level++) {
            if (!sb_isa_supported((sb_isa_level)level)) continue;
            for (int j = 0; j < 2; j++) {
                if (j == 1 && counts[1] == 1) break;
                char config[48];
                snprintf(config, sizeof config, "%s/%d", sb_isa_name((sb_isa_level)level), counts[j]);
                if (sb_set_isa((sb_isa_level)level) != SB_OK || sb_set_num_threads(counts[j]) != SB_OK) continue;
                tally one;
                memset(&one, 0, sizeof one);
                if (!run_cases(cases, count, quick, &opts, arena, false, config, &one)) { refused = true; break; }
                printf("%s  %s, %d thread%s (%d of %d)\n", one.passed == one.checked ? "PASS" : "FAIL",
                       sb_isa_name((sb_isa_level)level), counts[j], counts[j] == 1 ? "" : "s", one.passed,
                       one.checked);
                t.checked += one.checked;
                t.passed += one.passed;
                t.skipped = one.skipped;
                if (one.len) add_failure(&t, one.failed, NULL);
            }
            if (refused) break;
        }
        sb_set_isa(saved);
        sb_set_num_threads(counts[1]);
    }
    sb_arena_free(arena);
    free(cases);
    if (refused) return 2;
    if (t.skipped) printf("(%d case%s skipped)\n", t.skipped, t.skipped == 1 ? "" : "s");
    if (t.passed == t.checked) {
        printf("verdict: PASS (%d of %d)\n", t.passed, t.checked);
        return 0;
    }
    printf("verdict: FAIL (%d of %d failed: %s)\n", t.checked - t.passed, t.checked, t.failed);
    return 1;
}
