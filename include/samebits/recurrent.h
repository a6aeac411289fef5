/* samebits/recurrent.h - the time loop of the recurrent layers (nn.RNN,
 * nn.LSTM, nn.GRU): one direction of one layer over a packed sequence,
 * forward and backward through time.
 *
 * A recurrent layer has no kernel of its own (docs/CONTRACT.md, "Recurrent
 * layers"): each step IS the contract's sequence of public ops (sb_matmul,
 * sb_add, sb_sub, sb_mul, the sigmoid, tanh and relu activations and their
 * backward rules), and these functions run that sequence step after step on
 * the tensors' device, so a sequence costs one call instead of a dozen per
 * step. Their bits are those ops' bits. The input projection x . W_ih^T +
 * b_ih of all steps (gx) and the weight gradients (one linear backward over
 * all steps' rows) are single sb_linear_forward / sb_linear_backward calls
 * around them.
 *
 * Layout: a sequence is packed time-major, R rows (t, n) for t = 0..steps-1
 * and n = 0..batch_sizes[t]-1; every batch size is at least 1, none is larger
 * than the one before, the first is at most N (the state's rows), and they
 * add up to R. Step t reads and writes rows 0..batch_sizes[t]-1 of the state;
 * the other rows keep theirs. Sizes:
 *   G  gates per mode: 1 (RNN), 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n);
 *   H  the hidden size (w_hh has G*H rows);
 *   P  the state's width: H, or the LSTM's projection size when w_hr is given.
 * `saved` holds what the backward reads, K planes of (R, H):
 *   RNN  (K = 2): gx + gh, h'
 *   LSTM (K = 7): i, f, g, o, c (the state before the step), tanh(c'), o * tanh(c')
 *   GRU  (K = 5): r, z, n, gh_n, h - n
 * Every tensor is float32, contiguous and on one device; outputs must not
 * share memory with any other argument. batch_sizes is host memory. On a
 * validation error nothing is written.
 */
#ifndef SAMEBITS_RECURRENT_H
#define SAMEBITS_RECURRENT_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sb_rnn_mode {
    SB_RNN_TANH = 0, /* h' = tanh(gx + gh) */
    SB_RNN_RELU = 1, /* h' = relu(gx + gh) */
    SB_RNN_LSTM = 2,
    SB_RNN_GRU = 3
} sb_rnn_mode;

/* One direction's walk over a packed sequence. */
typedef struct sb_rnn_sequence {
    sb_rnn_mode mode;
    bool reverse;               /* t = steps-1 down to 0 (a bidirectional layer's second direction) */
    int64_t steps;              /* T >= 0 */
    const int64_t *batch_sizes; /* T entries, host memory (NULL allowed when T = 0) */
} sb_rnn_sequence;

/* Forward: gx (R, G*H) is x . W_ih^T + b_ih of every row; h0 (N, P) and, for
 * the LSTM, c0 (N, H) the initial states (NULL for the other modes); w_hh
 * (G*H, P), b_hh (G*H) or NULL, w_hr (P, H) or NULL (LSTM only). Writes the
 * outputs y (R, P), the final states h_n (N, P) and c_n (N, H, LSTM; NULL
 * otherwise), h_prev (R, P) (each row's state before its step: the rows the
 * weight gradient of w_hh reads) and saved (K, R, H). Each step:
 *   gh = h . W_hh^T (+ b_hh)                                  (sb_matmul, sb_add)
 *   RNN:  h' = tanh or relu(gx + gh)
 *   LSTM: a = gx + gh; i, f, o = sigmoid(a_i, a_f, a_o); g = tanh(a_g);
 *         c' = (f * c) + (i * g); m = o * tanh(c'); h' = m, or m . W_hr^T
 *   GRU:  r = sigmoid(gx_r + gh_r); z = sigmoid(gx_z + gh_z);
 *         n = tanh(gx_n + (r * gh_n)); h' = ((h - n) * z) + n */
SB_API sb_status sb_rnn_forward(const sb_rnn_sequence *seq, const sb_tensor *gx,
                                const sb_tensor *h0, const sb_tensor *c0, const sb_tensor *w_hh,
                                const sb_tensor *b_hh, const sb_tensor *w_hr, sb_tensor *y,
                                sb_tensor *h_n, sb_tensor *c_n, sb_tensor *h_prev,
                                sb_tensor *saved);

/* Backward through time, in the reverse of the forward's step order, from
 * the forward's w_hh, w_hr (or NULL) and saved, the output gradient dy
 * (R, P) and the final states' gradients dh_n (N, P) and dc_n (N, H, LSTM;
 * NULL otherwise). Writes dgx (R, G*H), the gradient of gx; dgh (R, G*H),
 * the gradient of gh, for the GRU only (for the other modes it equals dgx:
 * pass NULL); dh_all (R, P) or NULL, each row's whole h gradient dy + carried
 * (the LSTM projection's weight gradient reads it); dh0 (N, P) and dc0
 * (N, H, LSTM; NULL otherwise), the initial states' gradients. Each step,
 * with dh_s / dc_s the carried gradients:
 *   dh = dy_t + dh_s
 *   RNN:  dgx = tanh_backward(h', dh) or relu_backward(gx + gh, dh)
 *   LSTM: dm = dh, or dh . W_hr; d_o = sigmoid_backward(o, dm * tanh(c'));
 *         dc = tanh_backward(tanh(c'), dm * o) + dc_s;
 *         d_i = sigmoid_backward(i, dc * g); d_f = sigmoid_backward(f, dc * c);
 *         d_g = tanh_backward(g, dc * i); dgx = [d_i, d_f, d_g, d_o]; dc_s = dc * f
 *   GRU:  dd = dh * z; dn = tanh_backward(n, dh - dd);
 *         d_r = sigmoid_backward(r, dn * gh_n); d_z = sigmoid_backward(z, dh * (h - n));
 *         dgx = [d_r, d_z, dn]; dgh = [d_r, d_z, dn * r]
 *   dh_s = dgh . W_hh (the GRU adds it to dd: dd + dgh . W_hh) */
SB_API sb_status sb_rnn_backward(const sb_rnn_sequence *seq, const sb_tensor *w_hh,
                                 const sb_tensor *w_hr, const sb_tensor *saved,
                                 const sb_tensor *dy, const sb_tensor *dh_n, const sb_tensor *dc_n,
                                 sb_tensor *dgx, sb_tensor *dgh, sb_tensor *dh_all,
                                 sb_tensor *dh0, sb_tensor *dc0);

#ifdef __cplusplus
}
#endif

#endif
