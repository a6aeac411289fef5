/* samebits/conv.h - 2-D convolution, 2-D transposed convolution, 2-D max /
 * average pooling and 2-D padding.
 *
 * Images are NCHW, filters OIHW. Each convolution output element is one
 * GEMM-family chain (contract section "GEMM family": acc starts at +0.0f,
 * acc = fmaf(a, b, acc) per term in the stated order, bias added after with
 * one IEEE addition); pooling follows contract section "Pooling". Results
 * are bit-identical on every machine.
 *
 * Common rules: float32 tensors (max-pool indices int64), on the CPU,
 * contiguous; outputs are caller-provided with exactly the computed shape
 * and must not share memory with an input or with each other. Backward
 * functions WRITE their gradients (never accumulate); a NULL gradient output
 * is skipped. On any validation error nothing is written.
 */
#ifndef SAMEBITS_CONV_H
#define SAMEBITS_CONV_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- conv2d ---------------------------------------------------------------
 * stride >= 1, pad >= 0 (zeros on both sides), dilation >= 1, groups >= 1
 * dividing both channel counts. A NULL params pointer means
 * SB_CONV2D_PARAMS_DEFAULT (stride 1, no padding, dilation 1, one group). */
typedef struct sb_conv2d_params {
    int64_t stride_h, stride_w;
    int64_t pad_h, pad_w;
    int64_t dilation_h, dilation_w;
    int64_t groups;
} sb_conv2d_params;

#define SB_CONV2D_PARAMS_DEFAULT ((sb_conv2d_params){1, 1, 0, 0, 1, 1, 1})

/* out = floor((in + 2*pad - dilation*(kernel-1) - 1) / stride) + 1 per axis.
 * Fails (SB_ERR_SHAPE) when the dilated kernel is larger than the padded
 * input, or on out-of-range params. */
SB_API sb_status sb_conv2d_output_size(int64_t in_h, int64_t in_w, int64_t kernel_h, int64_t kernel_w,
                                const sb_conv2d_params *params, int64_t *out_h, int64_t *out_w);

/* x (N, C, H, W), w (O, C/groups, KH, KW), bias (O) or NULL, y (N, O, OH, OW).
 * y[n][o][r][s] = chain over (c, i, j) lexicographic (c over the group's
 * input channels, i < KH, j < KW) of x_pad[n][g*C/groups + c][r*sh - ph + i*dh]
 * [s*sw - pw + j*dw] * w[o][c][i][j], then + bias[o]. x_pad is x with +0.0f
 * outside it, and padded taps ARE terms (fmaf(0, w, acc): an inf or NaN
 * weight facing padding gives NaN). */
SB_API sb_status sb_conv2d_forward(const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias,
                            const sb_conv2d_params *params, sb_tensor *y);

/* Gradients of sb_conv2d_forward given dy (N, O, OH, OW); dx (shape of x),
 * dw (shape of w) and db (O) may each be NULL.
 *   dx[n][c][h][w'] = chain over (o, i, j) lexicographic (o over the group's
 *       output channels) of dy[n][o][r][s] * w[o][c][i][j], taking only the
 *       taps where an output (r, s) really reads (h, w') (no padding terms);
 *       +0.0f when there are none.
 *   dw[o][c][i][j] = chain over (n, r, s) lexicographic of dy[n][o][r][s] *
 *       x_pad[...] (padded taps ARE terms, with x_pad = +0.0f).
 *   db[o] = canonical sum over (n, r, s) lexicographic of dy[n][o][r][s]. */
SB_API sb_status sb_conv2d_backward(const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w,
                             const sb_conv2d_params *params, sb_tensor *dx, sb_tensor *dw,
                             sb_tensor *db);

/* ---- conv_transpose2d ------------------------------------------------------
 * The transposed convolution (PyTorch's conv_transpose2d), the adjoint of
 * conv2d: its forward is conv2d's input gradient, its input gradient is
 * conv2d's forward and its weight gradient conv2d's weight gradient with
 * input and output exchanged (contract section "GEMM family",
 * conv_transpose2d). stride >= 1, pad >= 0, dilation >= 1, groups >= 1
 * dividing both channel counts, 0 <= output_pad < stride or < dilation per
 * axis (PyTorch's rule). A NULL params pointer means
 * SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT. */
typedef struct sb_conv_transpose2d_params {
    int64_t stride_h, stride_w;
    int64_t pad_h, pad_w;
    int64_t output_pad_h, output_pad_w;
    int64_t dilation_h, dilation_w;
    int64_t groups;
} sb_conv_transpose2d_params;

#define SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT ((sb_conv_transpose2d_params){1, 1, 0, 0, 0, 0, 1, 1, 1})

/* out = (in - 1)*stride - 2*pad + dilation*(kernel-1) + output_pad + 1 per
 * axis. in >= 1; fails (SB_ERR_SHAPE) when out < 1, (SB_ERR_ARG) on
 * out-of-range params or int64 overflow. */
SB_API sb_status sb_conv_transpose2d_output_size(int64_t in_h, int64_t in_w, int64_t kernel_h,
                                                 int64_t kernel_w,
                                                 const sb_conv_transpose2d_params *params,
                                                 int64_t *out_h, int64_t *out_w);

/* x (N, C, H, W), w (C, O/groups, KH, KW), bias (O) or NULL, y (N, O, OH, OW).
 * Group g owns input channels g*C/groups.. and output channels g*O/groups..
 * y[n][g*O/groups + o][p][q] = chain over (c, i, j) lexicographic (c over
 * the group's input channels) of x[n][c][r][s] * w[c][o][i][j], taking only
 * the taps with r*sh - ph + i*dh == p and s*sw - pw + j*dw == q for an
 * input position (r, s) (no padding terms; +0.0f when there are none), then
 * + bias[o] with one IEEE addition. */
SB_API sb_status sb_conv_transpose2d_forward(const sb_tensor *x, const sb_tensor *w,
                                             const sb_tensor *bias,
                                             const sb_conv_transpose2d_params *params,
                                             sb_tensor *y);

/* Gradients of sb_conv_transpose2d_forward given dy (N, O, OH, OW); dx
 * (shape of x), dw (shape of w) and db (O) may each be NULL.
 *   dx[n][c][r][s] = chain over (o, i, j) lexicographic (o over the group's
 *       output channels) of dy_pad[n][o][r*sh - ph + i*dh][s*sw - pw + j*dw]
 *       * w[c][o][i][j], dy_pad = +0.0f outside dy (padded taps ARE terms).
 *   dw[c][o][i][j] = chain over (n, r, s) lexicographic of x[n][c][r][s] *
 *       dy_pad[n][o][r*sh - ph + i*dh][s*sw - pw + j*dw] (padded taps ARE
 *       terms).
 *   db[o] = canonical sum over (n, p, q) lexicographic of dy[n][o][p][q]. */
SB_API sb_status sb_conv_transpose2d_backward(const sb_tensor *dy, const sb_tensor *x,
                                              const sb_tensor *w,
                                              const sb_conv_transpose2d_params *params,
                                              sb_tensor *dx, sb_tensor *dw, sb_tensor *db);

/* ---- 2-D pooling ------------------------------------------------------------
 * kernel >= 1; stride >= 1, or 0 meaning "equal to the kernel" (PyTorch's
 * default); 0 <= pad <= kernel/2 (padding never wins a max and is never
 * summed). ceil_mode rounds the output size up like PyTorch (the last window
 * must still start inside the input or the left padding). count_include_pad
 * is used by average pooling only: divide by the window's positions inside
 * the padded input (PyTorch's default, true) or by its in-bounds positions
 * (false). A zero-filled struct has count_include_pad false: use
 * SB_POOL2D_PARAMS(kh, kw) for PyTorch's defaults.
 * dilation (max pooling only; PyTorch's avg_pool2d has none): window taps are
 * dilation apart, 0 meaning 1; the pad bound stays kernel/2 (PyTorch's), and
 * a window that would hold no in-bounds tap is refused (SB_ERR_SHAPE).
 * divisor_override (average pooling only): 0 means none, else every window
 * divides by this value (nonzero, |value| <= 2^24 so it is exact as a float)
 * instead of its counted positions. */
typedef struct sb_pool2d_params {
    int64_t kernel_h, kernel_w;
    int64_t stride_h, stride_w;
    int64_t pad_h, pad_w;
    bool ceil_mode;
    bool count_include_pad;
    int64_t dilation_h, dilation_w;
    int64_t divisor_override;
} sb_pool2d_params;

#define SB_POOL2D_PARAMS(kh, kw) ((sb_pool2d_params){(kh), (kw), 0, 0, 0, 0, false, true, 1, 1, 0})

/* out = floor_or_ceil((in + 2*pad - dilation*(kernel-1) - 1) / stride) + 1 per
 * axis, minus one in ceil mode when the last window would start at or past
 * in + pad. */
SB_API sb_status sb_pool2d_output_size(int64_t in_h, int64_t in_w, const sb_pool2d_params *params,
                                int64_t *out_h, int64_t *out_w);

/* x (N, C, H, W) with H, W >= 1, y (N, C, OH, OW), indices (N, C, OH, OW)
 * int64 or NULL. y is the first NaN of the window if it has one, else the
 * first maximal element in (i, j) order (a later element wins only if it
 * compares >, so of +0 and -0 the first wins); indices holds its position
 * h*W + w within its plane (PyTorch's convention). y copies x's bits. */
SB_API sb_status sb_max_pool2d_forward(const sb_tensor *x, const sb_pool2d_params *params, sb_tensor *y,
                                sb_tensor *indices);

/* dx (N, C, H, W) from dy and indices (N, C, OH, OW) from the forward pass:
 * dx[n][c][h][w'] = canonical sum, over the windows (r, s) in lexicographic
 * order whose index is h*W + w', of dy[n][c][r][s]; +0.0f when none. Every
 * index must lie inside its own window (SB_ERR_RANGE otherwise). */
SB_API sb_status sb_max_pool2d_backward(const sb_tensor *dy, const sb_tensor *indices,
                                 const sb_pool2d_params *params, sb_tensor *dx);

/* y[n][c][r][s] = (canonical sum of the window's in-bounds elements in (i, j)
 * order) / divisor, one IEEE division; the divisor is divisor_override
 * when it is set. */
SB_API sb_status sb_avg_pool2d_forward(const sb_tensor *x, const sb_pool2d_params *params, sb_tensor *y);

/* dx[n][c][h][w'] = canonical sum, over the windows (r, s) containing (h, w')
 * in lexicographic order, of dy[n][c][r][s] / divisor(r, s); +0.0f if none. */
SB_API sb_status sb_avg_pool2d_backward(const sb_tensor *dy, const sb_pool2d_params *params,
                                 sb_tensor *dx);

/* ---- 2-D padding ------------------------------------------------------------
 * y (N, C, H + top + bottom, W + left + right) from x (N, C, H, W), each
 * output a bit copy of one input element or, in constant mode, `value`
 * (contract section "Padding"). Per axis an output position o maps to the
 * input position i = o - before, brought into range by the mode:
 *   SB_PAD_CONSTANT  none when i is out of range (y takes `value`);
 *   SB_PAD_REFLECT   -i below 0, 2*(size-1) - i past the end (the edge is
 *                    not repeated); pad < size;
 *   SB_PAD_REPLICATE the nearest edge; size >= 1;
 *   SB_PAD_CIRCULAR  i modulo size; pad <= size.
 * Pads are >= 0 (no cropping). The backward gathers: dx[h][w] is the
 * canonical sum, over the outputs (r, s) that copy x[h][w] in lexicographic
 * order, of dy[r][s] (one term, unchanged, in constant mode). */
typedef enum sb_pad_mode {
    SB_PAD_CONSTANT = 0,
    SB_PAD_REFLECT = 1,
    SB_PAD_REPLICATE = 2,
    SB_PAD_CIRCULAR = 3
} sb_pad_mode;

typedef struct sb_pad2d_params {
    int64_t left, right, top, bottom;
    sb_pad_mode mode;
    float value; /* constant mode only */
} sb_pad2d_params;

/* x (N, C, H, W), y (N, C, H + top + bottom, W + left + right). */
SB_API sb_status sb_pad2d_forward(const sb_tensor *x, const sb_pad2d_params *params, sb_tensor *y);

/* dx (N, C, H, W) from dy (N, C, H + top + bottom, W + left + right). */
SB_API sb_status sb_pad2d_backward(const sb_tensor *dy, const sb_pad2d_params *params,
                                   sb_tensor *dx);

/* ---- adaptive 2-D pooling -------------------------------------------------
 * The output size is y's (OH, OW), any values >= 0 (OH > H allowed): window
 * (r, s) covers rows floor(r*H/OH) .. ceil((r+1)*H/OH) - 1 and columns
 * floor(s*W/OW) .. ceil((s+1)*W/OW) - 1 (PyTorch's rule), so windows may
 * differ in size and overlap. x (N, C, H, W) with H, W >= 1; H, W, OH, OW
 * at most INT32_MAX. Max and average follow the rules of sb_max_pool2d_* /
 * sb_avg_pool2d_* above over these windows (first NaN, else first maximum;
 * canonical sum / window size); contract section "Adaptive pooling". */

/* y (N, C, OH, OW); indices (N, C, OH, OW) int64 or NULL. */
SB_API sb_status sb_adaptive_max_pool2d_forward(const sb_tensor *x, sb_tensor *y, sb_tensor *indices);

/* dx (N, C, H, W) from dy and the forward's indices (N, C, OH, OW). Every
 * index must lie inside its own window (SB_ERR_RANGE otherwise). */
SB_API sb_status sb_adaptive_max_pool2d_backward(const sb_tensor *dy, const sb_tensor *indices,
                                                 sb_tensor *dx);

/* y (N, C, OH, OW). */
SB_API sb_status sb_adaptive_avg_pool2d_forward(const sb_tensor *x, sb_tensor *y);

/* dx (N, C, H, W) from dy (N, C, OH, OW). */
SB_API sb_status sb_adaptive_avg_pool2d_backward(const sb_tensor *dy, sb_tensor *dx);

/* ---- interpolation (resampling) ---------------------------------------------
 * PyTorch's F.interpolate / nn.Upsample without antialias (contract section
 * 8, "Interpolation"). x is (N, C, S...) with 1 to 3 spatial axes, each of
 * size >= 1; y (N, C, O...) with the same N, C and output sizes >= 1 (the
 * caller's output size). Per axis an output position reads taps of the
 * input with weights computed from the axis's float32 scale:
 *   SB_INTERP_NEAREST        1 tap: floor(o * scale), at most in - 1
 *   SB_INTERP_NEAREST_EXACT  1 tap: floor((o + 0.5) * scale), at most in - 1
 *   SB_INTERP_LINEAR         2 taps (linear, bilinear, trilinear)
 *   SB_INTERP_CUBIC          4 taps, A = -0.75, clamped at the borders
 * scale is (in - 1) / (out - 1) with align_corners (linear and cubic only),
 * else float(1.0 / scales[k]) when scales[k] > 0 (PyTorch's scale_factor as
 * passed to its kernel), else in / out. The forward nests per axis,
 * innermost axis first, each a left-to-right sum of value * weight; the
 * backward gathers: dx is the canonical sum, over the (output, tap) pairs
 * that read it in row-major order, of dy * (product of the axis weights). */
typedef enum sb_interp_mode {
    SB_INTERP_NEAREST = 0,
    SB_INTERP_NEAREST_EXACT = 1,
    SB_INTERP_LINEAR = 2,
    SB_INTERP_CUBIC = 3
} sb_interp_mode;

typedef struct sb_interpolate_params {
    sb_interp_mode mode;
    bool align_corners; /* linear and cubic only; must be false otherwise */
    double scales[3];   /* per spatial axis, outermost first: > 0, or 0 for none */
} sb_interpolate_params;

/* x (N, C, S...), y (N, C, O...); 3 to 5 dims. */
SB_API sb_status sb_interpolate_forward(const sb_tensor *x, const sb_interpolate_params *params,
                                        sb_tensor *y);

/* dx (N, C, S...) from dy (N, C, O...). */
SB_API sb_status sb_interpolate_backward(const sb_tensor *dy, const sb_interpolate_params *params,
                                         sb_tensor *dx);

/* ---- grid sampling ----------------------------------------------------------
 * PyTorch's F.grid_sample on 4-D input (contract section 8, "Grid
 * sampling"). x (N, C, H, W) with H, W >= 1, grid (N, OH, OW, 2) holding (x,
 * y) in [-1, 1] (-1 the left/top edge), y (N, C, OH, OW). Each grid value is
 * unnormalized to a source position (align_corners: (g + 1) * (S - 1) / 2;
 * else (g + 1) * S / 2 - 0.5), then padded: zeros (outside reads +0), border
 * (clipped into [0, S - 1]) or reflection (reflected about the edges, then
 * clipped). Bilinear sums v * weight over the 4 corners (nw, ne, sw, se) left
 * to right; nearest copies the element at the position rounded half to even.
 * The backward gathers: dx is the canonical sum, over the (grid point,
 * corner) pairs that read an element in row-major order, of weight * dy;
 * dgrid is the canonical sum over channels of each point's per-channel
 * derivative, times the coordinate's factor (0 for nearest). */
typedef enum sb_grid_mode { SB_GRID_BILINEAR = 0, SB_GRID_NEAREST = 1 } sb_grid_mode;

typedef enum sb_grid_padding {
    SB_GRID_ZEROS = 0,
    SB_GRID_BORDER = 1,
    SB_GRID_REFLECTION = 2
} sb_grid_padding;

typedef struct sb_grid_sample_params {
    sb_grid_mode mode;
    sb_grid_padding padding_mode;
    bool align_corners;
} sb_grid_sample_params;

/* y (N, C, OH, OW) from x (N, C, H, W) and grid (N, OH, OW, 2). */
SB_API sb_status sb_grid_sample_forward(const sb_tensor *x, const sb_tensor *grid,
                                        const sb_grid_sample_params *params, sb_tensor *y);

/* dx (N, C, H, W) and dgrid (N, OH, OW, 2), each optional (NULL: not
 * computed), from dy (N, C, OH, OW), x and grid. */
SB_API sb_status sb_grid_sample_backward(const sb_tensor *dy, const sb_tensor *x,
                                         const sb_tensor *grid,
                                         const sb_grid_sample_params *params, sb_tensor *dx,
                                         sb_tensor *dgrid);

#ifdef __cplusplus
}
#endif
#endif
