"""The backend contract: a device type name plus a table of primitive kernels (the internals; plugins use its
public, documented face, :mod:`coretorch.plugins.backend`, re-exported by ``coretorch.plugins``).

A backend (registered by a plugin through ``coretorch_register_backends``) is any object with

* ``name``: the device type, e.g. ``"cpu"``;
* ``distribution``: optional, the distribution that ships it (filled in by the loader);
* ``is_available()``, ``device_count()``, ``device_name(index)``;
* ``kernels(index) -> dict[str, callable]``: the primitive table for one device (see ``PRIMITIVES``);
* ``manual_seed(seed)``;
* optionally ``host_kernels``: the names of kernels that run on the host for this device (shown by
  ``coretorch info``), ``host_memory``/``native_broadcast`` flags (see ``KernelTable``);
* optionally ``host_fusion(device_type) -> provider | None``: kernels of this backend that work on another
  (host-memory) device's arrays, offered to that device's compiled replays under ``compile(mode="max-autotune")``
  (the opencl backend's PoCL kernels for 'cpu'; the provider's contract: ``coretorch/_compile/hostfuse.py``).

Kernels take and return the backend's native arrays (which expose ``.shape``); the core does every
check (shapes, dtypes, devices), broadcasting (through ``expand``), type promotion (through ``cast``)
and autograd before a kernel runs.  A missing kernel raises ``NotImplementedError`` naming the op and
device, or with ``CORETORCH_FALLBACK=cpu`` runs on the CPU backend with a one-time warning per op.
The per-device table is built once, at registration: dispatch is an attribute lookup.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import difflib
import os
import threading
import warnings

from . import _rnglock
from .device import device as Device

# name -> one-line signature; the contract a backend implements.  Scalars are Python numbers.
PRIMITIVES: dict[str, str] = {
    # transfer and creation
    "from_numpy": "(ndarray) -> array, may share memory", "to_numpy": "(x) -> ndarray",
    "full": "(shape, value, np_dtype) -> array", "empty": "(shape, np_dtype) -> array",
    "arange": "(start, end, step, np_dtype) -> array", "eye": "(n, m, np_dtype) -> array",
    "rand": "(shape, np_dtype) -> U[0,1)", "randn": "(shape, np_dtype) -> N(0,1)",
    "randint": "(low, high, shape, np_dtype)", "manual_seed": "(seed)",
    "uniform_": "(x, low, high) in place", "normal_": "(x, mean, std) in place",
    # layout
    "cast": "(x, np_dtype) -> array", "contiguous": "(x) -> contiguous copy",
    "is_contiguous": "(x) -> bool", "strides": "(x) -> element strides",
    "view": "(x, shape) -> view or None when the strides forbid it", "permute": "(x, dims) -> view",
    "expand": "(x, shape) -> broadcast view", "basic_index": "(x, key of int/slice/None/Ellipsis) -> view",
    "flip": "(x, dims) -> copy", "tile": "(x, reps) -> copy", "cat": "(arrays, axis) -> array",
    "assign_": "(dst, src array|scalar) in place", "setitem_": "(x, key, value) in place",
    "index": "(x, key with index arrays) -> copy", "index_put_": "(x, key, values, accumulate) in place",
    "gather": "(x, dim, index)", "scatter_add": "(x, dim, index, src) -> new array",
    "index_select": "(x, dim, index)", "index_add": "(x, dim, index, src) -> new array",
    "nonzero": "(x) -> int64 array (n, ndim)",
    # elementwise
    "neg": "", "exp": "", "log": "", "sqrt": "", "rsqrt": "", "abs": "", "sign": "", "sin": "",
    "cos": "", "tanh": "", "sigmoid": "", "relu": "", "reciprocal": "", "floor": "", "ceil": "",
    "round": "", "trunc": "", "expm1": "", "log1p": "", "logical_not": "", "bitwise_not": "",
    "isnan": "", "add": "", "sub": "", "mul": "", "div": "", "floor_divide": "", "remainder": "",
    "pow": "(x, y|scalar): an integer base to a negative integer power truncates as PyTorch's (1 ** -n = 1, "
           "(-1) ** -n = +-1, any other base 0), not an error",
    "maximum": "", "minimum": "", "eq": "", "ne": "", "lt": "", "le": "", "gt": "",
    "ge": "", "logical_and": "", "logical_or": "", "logical_xor": "", "bitwise_and": "",
    "bitwise_or": "", "bitwise_xor": "", "where": "(cond, x, y)", "clamp": "(x, lo|None, hi|None)",
    # reductions and scans
    "sum": "(x, axes|None, keepdim)", "prod": "(x, axes|None, keepdim)", "amax": "(x, axes|None, keepdim)",
    "amin": "(x, axes|None, keepdim)", "argmax": "(x, axis|None, keepdim)", "argmin": "(x, axis|None, keepdim)",
    "any": "(x, axes|None, keepdim)", "all": "(x, axes|None, keepdim)", "cumsum": "(x, axis)",
    "cumprod": "(x, axis)",
    # linear algebra
    "matmul": "(a (..., n, k), b (..., k, m)) with equal batch shapes",
    # optional: in-place arithmetic x op= y (y same shape/dtype or scalar); used when no graph is recorded
    "iadd": "optional", "isub": "optional", "imul": "optional", "idiv": "optional",
    "axpy_": "optional (y, alpha, x) in place: y += alpha * x, x of y's shape and dtype (SGD's update in one pass; "
             "float16/bfloat16: alpha rounded to y's dtype first, as PyTorch's add_)",
    # optional fused kernels of nn.functional (a backend without them gets composites of the kernels above)
    "linear": "optional (x (N, in), w (out, in), b (out,)|None) -> x @ w.T + b (N, out): nn.Linear's forward",
    "linear_backward": "optional (g (N, out), x (N, in), w (out, in), need_x, need_w, need_b) -> (g @ w, g.T @ x, "
                       "g summed over N), each None where not needed: nn.Linear's backward",
    "conv2d": "optional (x (N,C,H,W), w (O,C/g,KH,KW), stride, padding, dilation, groups) -> (N,O,OH,OW)",
    "conv2d_backward_input": "optional (gy, w, x_shape, stride, padding, dilation, groups) -> gx",
    "conv2d_backward_weight": "optional (x, gy, w_shape, stride, padding, dilation, groups) -> gw",
    "max_pool2d": "optional (x, kernel, stride, padding, dilation, (OH, OW)) -> (values, int64 flat h*W+w indices)",
    "max_pool2d_backward": "optional (gy, indices, x_shape) -> gx",
    "softmax": "optional (x, dim)", "log_softmax": "optional (x, dim)", "erf": "optional (x)",
    "log_softmax_backward": "optional (g, y, dim) -> g - exp(y) * g.sum(dim, keepdim) (y the log_softmax output)",
    "nll_loss": "optional (x (M, C), target (M,) int64, weight (C,)|None, ignore_index) -> (losses (M,), "
                "weights (M,), index (M,) int64): losses[i] = -w[t_i] x[i, t_i] and weights[i] = w[t_i] (w = 1 "
                "without weight), both 0 where t_i == ignore_index; index[i] = t_i, or 0 where ignored.  A target "
                "outside [0, C) that is not ignored raises IndexError('Target 12 is out of bounds.'), at once or, "
                "on an asynchronous device, at the next host read (as CUDA's device-side assert)",
    "nll_loss_backward": "optional (g, weights (M,), total ()|None, index (M,) int64, target (M,), ignore_index, "
                         "C, reduction) -> (M, C): -w_i g_i ('none', g (M,)), -w_i g ('sum', g 0-d) or -w_i (g / "
                         "total) ('mean') at (i, index_i) where target_i != ignore_index, 0 elsewhere (nll_loss's "
                         "weights and index; a row of weight 0 gets -(0 * g), NaN where total is 0, as PyTorch's)",
    # optional device-side checks (the core reads a reduction back to the host without them; skipped for host_memory)
    "check_index": "optional (index (any layout, integer dtype), size, allow_negative, message, exc=IndexError) "
                   "-> None: an index outside [0, size), or [-size, size) with allow_negative, raises "
                   "exc(message.format(v)), "
                   "v the largest index when one is >= size, else the smallest (as the host check), at once or, on "
                   "an asynchronous device, at the next host read (the op itself runs; its kernels must not touch "
                   "memory outside the tensor for such an index)",
    # optional compiler hook of coretorch.compile (coretorch/_compile/fusion.py): not a kernel a tensor op calls
    "compile_fused": "optional (programs: list of coretorch._compile.fusion.FusedProgram) -> list of callables "
                     "fn(*arrays, *scalars) -> output arrays (None where declined): each group of recorded elementwise "
                     "launches as one generated kernel; an attribute fusable(name, args, out) -> bool narrows the "
                     "launches offered; attributes prologues (row kernel names) and prologue(name, program, args) -> "
                     "callable or None compute a group inside the row kernel that reads it; optional "
                     "follows_operands = True where eager's results follow their operands' layouts (a fused "
                     "kernel's are row-major): the replay checks the layouts of the persistent arrays they read",
    "compile_out": "optional (name, args, kwargs, result) -> fn(out, *args, **kwargs) -> out writing exactly what "
                   "kernel `name` returned for these operands into a given array of the result's shape, dtype and "
                   "strides (None where declined), for coretorch.compile's planned temporaries "
                   "(coretorch/_compile/plan.py); an attribute empty_like(x) -> a new array of x's shape, dtype and "
                   "strides; optional follows_operands = True where a kernel's result layout follows its operands' "
                   "(numpy's, opencl's): the replay checks the layouts of the persistent arrays its planned "
                   "launches read",
    "compile_lower": "optional object for coretorch.compile's lowered replays (coretorch/_compile/lower.py): "
                     "observer() -> a context manager with begin() / end() -> events around each replay line; "
                     "summary(events, input arrays, output arrays) -> a summary holding no array, or None; state() "
                     "-> the settings its kernel choices depend on; lower(summaries, ins, outs, prefix) -> (code "
                     "lines, constants) or None: one table call as the launches it made, the same in every observed "
                     "run, as code that checks the inputs' layouts and ends with an else: for the table call",
    "check_mark": "optional () -> a mark of the device-side checks launched so far (with discard_checks)",
    "check_pending": "optional () -> bool: whether a device-side check launched since the last host read failed "
                     "(may read the device; the next host read reports it; coretorch.compile's early checks then "
                     "run eagerly)",
    "discard_checks": "optional (mark) -> None: forget a failed device-side check launched after mark (its op raised "
                      "on the host); a failure of an earlier launch stays pending",
    "check_values": "optional (x (any layout, integer or bool dtype), kind, message) -> None: an element of x that "
                    "is 0 (kind 'nonzero', the only kind: a divisor of integer // and %) raises "
                    "RuntimeError(message) (the message as is), at once or, on an asynchronous device, at the next "
                    "host read (the op itself runs: its kernels must give some value for such an operand without "
                    "trapping)",
}
CORE_PRIMITIVES = frozenset(PRIMITIVES)  # the block above: creation, layout, elementwise, reductions, matmul
# ---- the op families' primitives (optional ones say so); one block per family ----
PRIMITIVES.update({  # sorting: owned by coretorch/ops/sorting.py
    "sort": "(x, axis, descending, stable) -> (values, int64 indices) along axis (0-d: a copy and 0): NaN sorts as "
            "the largest value; stable keeps equal elements in input order (descending too)",
    "topk": "(x, k, axis, largest, sorted) -> (values, int64 indices) of the k largest (smallest) along axis, NaN the "
            "largest; k <= size of axis",
    "kthvalue": "optional (x, k, axis) -> (values, int64 indices) of the k-th smallest (0-based) along axis, the axis "
                "kept with size 1 (0-d: a copy and 0); NaN the largest.  Without it: topk's k + 1 smallest",
    "searchsorted": "(seq (N,) or (..., N) C-contiguous sorted rows, values (..., M) C-contiguous with seq's leading "
                    "dims, right, np out dtype int64|int32) -> insertion points (..., M)",
    "cummax": "(x, axis) -> (running max, int64 index of the last element equal to it; NaN propagates)",
    "cummin": "(x, axis) -> (running min, int64 index of the last element equal to it; NaN propagates)",
    "logcumsumexp": "(x float, axis) -> log(cumsum(exp(x))) computed stably",
})
PRIMITIVES.update({  # special: owned by coretorch/ops/special.py
    # unary, float in -> same float out (the core casts integer and bool inputs to the default float first)
    **{n: "(x) float -> float" for n in (
        "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erfc",
        "lgamma", "sinc", "ndtr", "entr", "erfinv", "digamma", "i0", "i0e", "i1", "i1e", "ndtri", "erfcx",
        "log_ndtr")},
    "signbit": "(x) float -> bool: the sign bit (-0.0 and -nan included)",
    "polygamma": "(x, n) float, int n >= 1 -> float: the n-th derivative of digamma",
    "frexp": "(x) float -> (mantissa of x's dtype in [0.5, 1) or 0, int32 exponent); inf/nan: (x, 0)",
    "ldexp": "optional (x float32|float64, e int32 of x's shape; either may be a broadcast view) -> x * 2 ** e in "
             "x's dtype rounded once (C's ldexp: 2.0**100 * 2**-200 is 2**-100 in float32). Without it: three "
             "multiplications by powers of two, exact where the result is a normal float",
    # binary, both operands float of one dtype (or a Python scalar second), broadcast by the core
    **{n: "(x, y|scalar) float -> float" for n in (
        "atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy", "xlog1py")},
    **{n: "(x, y|scalar) -> x's dtype: NaN-ignoring max/min" for n in ("fmax", "fmin")},
    "gelu": "optional (x) float -> x * Phi(x) (GELU, the erf form) in one pass, for nn.functional.gelu's forward",
    "igamma": "optional (a, x) float32/float64 arrays of one dtype and broadcast-compatible shapes (equal shapes where "
              "the backend has no native_broadcast) -> the regularised lower incomplete gamma P(a, x): NaN for a < 0 "
              "or x < 0 or a = x = 0, 1 for a = 0 < x, 0 for infinite a and finite x",
    "igammac": "optional (a, x) as igamma -> the regularised upper incomplete gamma Q(a, x) = 1 - P(a, x)",
    **{n: "(x) float32|float64 -> same: torch.special." + n + " (float16/bfloat16 never reach it: PyTorch has no "
          "kernel for them)" for n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
                                       "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                       "airy_ai")},
    "zeta": "(x, q|scalar) float32|float64 arrays of one dtype (equal shapes where the backend has no "
            "native_broadcast) -> the Hurwitz zeta function sum_k (k + q) ** -x: inf at x = 1, NaN for x < 1, inf for "
            "an integer q <= 0, NaN for q = +inf (PyTorch's, Cephes' convention)",
    # integer binary ops (coretorch/ops/bits.py): both operands of one integer dtype (or a Python int second)
    "gcd": "optional (x, y|scalar) integer -> x's dtype: the non-negative gcd (gcd(INT_MIN, 0) wraps to INT_MIN)",
    "lcm": "optional (x, y|scalar) integer -> x's dtype: |x / gcd * y| wrapping, 0 if either is 0",
    "bitwise_left_shift": "optional (x, y|scalar) integer -> x << y wrapping; 0 where y < 0 or y >= the bit width",
    "bitwise_right_shift": "optional (x, y|scalar) integer -> x >> y arithmetic; y < 0 or y >= the bit width gives "
                           "the sign fill (0 or -1)",
})
PRIMITIVES.update({  # shaping: owned by coretorch/ops/triangular.py, joining.py, scatter.py
    "as_strided": "(x, shape, strides, offset) -> view of x's memory: element strides, the first element `offset` "
                  "elements after x's own (as_strided, diagonal, unfold)",
    "storage_offset": "(x) -> int: element offset of x's first element from the start of the buffer it views",
    "view_dtype": "optional (x, np_dtype) -> view of x's memory read as np_dtype (ndarray.view(dtype)): x's byte "
                  "offset and byte strides, the last dim's size scaled by the itemsize ratio and its stride one "
                  "element; the core checks PyTorch's rules first (the last dim contiguous where the itemsizes "
                  "differ). Without it view(dtype) raises",
    "data_ptr": "optional (x) -> int: the address of x's first element (a device's buffer handle plus the byte "
                "offset where it has no addresses): views of one buffer differ by their byte offsets, as PyTorch's",
    "same_storage": "optional (x, y) -> bool: x and y view the same buffer (False allowed where their memory "
                    "ranges are disjoint): copy_/setitem/add_ refuse a source partly overlapping the destination",
    "index_reduce_": "(x, key with index arrays, values, op) in place: x[key] = op(x[key], values) with repeated "
                     "indices combined, op 'sum' | 'prod' | 'amax' | 'amin' (max/min propagate NaN): scatter_reduce",
    "tri": "optional (x, diagonal, lower) -> copy of x (ndim >= 2) keeping the elements of the last two dims with "
           "j - i <= diagonal (lower) or j - i >= diagonal (upper), zeros elsewhere: tril/triu (composite: where)",
})
PRIMITIVES.update({  # products: owned by coretorch/ops/products.py
})
PRIMITIVES.update({  # linalg: owned by coretorch/ops/decomp.py and coretorch/linalg
    "linalg_inv_ex": "(a (..., n, n) float) -> (inverse, info int32 (...)): info 0, or k where the LU's pivot k is 0 "
                     "(that matrix's inverse undefined)",
    "linalg_solve_ex": "(a (..., n, n), b (..., n, k), equal batch dims) -> (x, info int32 (...)) as linalg_inv_ex",
    "linalg_det": "(a (..., n, n)) -> det (...)",
    "linalg_slogdet": "(a (..., n, n)) -> (sign (...), log|det| (...)), both a's dtype",
    "linalg_cholesky_ex": "(a (..., n, n), upper) -> (L (or U = L^T, reading a's upper triangle), info int32 (...)): "
                          "info k > 0 where the leading minor of order k is not positive-definite",
    "linalg_qr": "(a (..., m, n), mode 'reduced'|'complete'|'r') -> (Q (empty (0,) for 'r'), R)",
    "linalg_svd": "(a (..., m, n), full_matrices, compute_uv) -> (U|None, S (..., min(m, n)) descending, Vh|None)",
    "linalg_eigh": "(a (..., n, n), uplo 'L'|'U', compute_v) -> (eigenvalues ascending (..., n), V|None)",
    "linalg_lstsq": "(a (..., m, n), b (..., m, k), rcond) -> (minimum-norm solution (..., n, k), rank int64 (...), "
                    "singular values (..., min(m, n)))",
})
PRIMITIVES.update({  # random: owned by coretorch/ops/random.py
    # optional all together (without them a device samples with a host-side cpu generator and uploads); a
    # generator state is an object of the backend's that the kernels below advance
    "rng_new": "optional (seed) -> a new generator state", "rng_seed": "optional (state, seed) reseed in place",
    "rng_default": "optional () -> the device's default state (the one rand/randn/randint/uniform_/normal_ and "
                   "manual_seed use)",
    "rng_initial_seed": "optional (state) -> int", "rng_get_state": "optional (state) -> a new uint8 ndarray",
    "rng_set_state": "optional (state, uint8 ndarray) in place; RuntimeError for a state of the wrong size",
    "rng_fill_": "optional (state, x, dist, a, b) in place, x of any layout: 'uniform' U[a, b), 'normal' N(a, b^2), "
                 "'exponential' (rate a), 'geometric' (p a; integers >= 1), 'log_normal' exp(N(a, b^2)), "
                 "'cauchy' (median a, scale b), 'bernoulli' (p a; 0/1)",
    "rng_randint": "optional (state, low, high, shape, np_dtype) -> integers of [low, high) (high - low <= 2**64)",
    "rng_poisson": "optional (state, rates) -> samples of rates' shape and dtype",
    "rng_multinomial": "optional (state, probs (R, C) float32/64, n, replacement) -> int64 (R, n); probs checked "
                       "by the core (finite, >= 0, rows summing > 0)",
    "rng_randperm": "optional (state, n, np_dtype) -> a permutation of range(n)",
})
PRIMITIVES.update({  # dtypes: owned by coretorch/dtypes.py (bfloat16)
})
PRIMITIVES.update({  # fused nn kernels (issue 14 speed): owned by coretorch/nn/functional/_fused.py, _rnn_fused.py;
    # float32/float64 operands of one dtype only, each optional (composites of the kernels above without them)
    "layer_norm": "optional (x, w|None, b|None, eps, k) -> (y, mean, rstd) over the last k dims, mean and rstd of "
                  "shape x.shape[:-k] + (1,) * k",
    "layer_norm_backward": "optional (g, x, mean, rstd, w|None, k, need_x, need_w, need_b) -> (gx, gw, gb), None "
                           "where not needed",
    "softmax_backward": "optional (g, y, dim) -> y * (g - sum(g * y, dim, keepdim)) (y the softmax output)",
    "gelu_backward": "optional (g, x, cdf=None) -> g * (Phi(x) + x phi(x)): GELU's (erf form) input gradient; cdf "
                     "the array gelu_cdf kept when the forward used it",
    "gelu_cdf": "optional (x float32) -> (x Phi(x), an array kept for this backend's gelu_backward, or None): "
                "GELU's forward keeping what makes the backward cheap (cpu: Phi(x); opencl: GELU'(x))",
    "lstm_cell": "optional (gates (N, 4H) pre-activations i|f|g|o, c (N, H), gi=None (N, 4H) added to gates "
                 "(which is then scratch: may be overwritten), out=None (N, H) view h is written into) -> (h, c_new, "
                 "act: the backend's saved activations, passed back to lstm_cell_backward)",
    "lstm_cell_backward": "optional (dh (N, H), dc (N, H)|None, c_prev, act, dy=None (N, H) added to dh, out=None "
                          "(N, 4H) view d gates is written into) -> (d gates (N, 4H), dc_prev)",
    "lstm_sequence": "optional (gi (L, N, 4H) input projection with both biases, i|f|g|o; h0, c0 (N, H); w_hh "
                     "(4H, H); reverse) -> (ys (L, N, H), h_n, c_n: fresh arrays, *saved: arrays the backend keeps "
                     "for lstm_sequence_backward; a flat tuple, as compile's recorder tracks outputs one level "
                     "deep): one LSTM layer and direction",
    "lstm_sequence_backward": "optional (saved (tuple), h0, c0, w_hh, reverse, gy (L, N, H)|None, gh_n|None, "
                              "gc_n|None, need_h0, need_c0, need_w) -> (d gi (L, N, 4H), dh0|None, dc0|None, "
                              "d w_hh|None)",
    "gru_cell": "optional (gi (N, 3H) input projection r|z|n, gh (N, 3H) hidden product (scratch: may be overwritten), "
                "h (N, H), b=None (3H,) b_hh added to gh, out=None (N, H) view h' is written into) -> (h', act: the "
                "backend's saved activations, passed back to gru_cell_backward); PyTorch's formulas, r multiplies "
                "the hidden n part including b_hn",
    "gru_cell_backward": "optional (dh (N, H), h_prev, act, dy=None (N, H) added to dh, out=None / gh_out=None (N, 3H) "
                         "views d gi / d gh are written into) -> (d gi, d gh, dh * z: the direct part of dh_prev)",
})
PRIMITIVES.update({  # optimizers: used by coretorch-extra-ops' Adam/AdamW (one launch per parameter instead of ~13)
    "adam_step_": "optional (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq|None, step, lr, beta1, beta2, eps, "
                  "weight_decay, decoupled, maximize) -> bool: one Adam step of param and its state in place (grad "
                  "negated with maximize; weight decay decoupled p *= 1 - lr wd, or L2 g += wd p; exp_avg lerped "
                  "towards g by 1 - beta1; exp_avg_sq = beta2 exp_avg_sq + (1 - beta2) g g; max_exp_avg_sq the "
                  "running max (AMSGrad); p += -lr / (1 - beta1^step) exp_avg / (sqrt(v) / sqrt(1 - beta2^step) + "
                  "eps)), the Python scalars computed in float64 as the composite does; False, nothing written, "
                  "for a case it does not take (dtype, layout): the caller then runs the composite",
    "fused_adam_": "optional (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs|None: lists of arrays, steps: "
                   "list of floats, lr, beta1, beta2, eps, weight_decay, decoupled, maximize) -> bool: adam_step_ "
                   "for every tensor of the lists with the same results, in one launch or a few (PyTorch's "
                   "_fused_adam_); False, nothing written, for lists it does not take",
    "fused_sgd_": "optional (params, grads, momentum_buffers|None: lists of arrays, lr, momentum, dampening, "
                  "weight_decay, nesterov, maximize, first) -> bool: the foreach SGD step of every tensor in one "
                  "launch or a few (PyTorch's _fused_sgd_; with first the buffers are set to the gradient); the "
                  "results of the foreach step's kernels; False, nothing written, for lists it does not take",
})
UNARY = ("neg", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh", "sigmoid", "relu",
         "reciprocal", "floor", "ceil", "round", "trunc", "expm1", "log1p", "logical_not", "bitwise_not",
         "isnan",
         # special
         "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erfc",
         "lgamma", "sinc", "ndtr", "entr", "signbit", "erfinv", "digamma", "i0", "i0e", "i1", "i1e", "ndtri",
         "erfcx", "log_ndtr")
BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "eq",
          "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
          "bitwise_or", "bitwise_xor",
          # special
          "atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy", "xlog1py", "fmax", "fmin")

_backends: dict[str, Any] = {}      # device type -> backend object
_tables: dict[Device, "KernelTable"] = {}
_TABLES_LOCK = threading.Lock()  # get_table: a device's table is put in _tables once (check and insert together)
_extra_kernels: dict[str, dict[str, object]] = {}  # op name -> {device type: kernel} from plugins
# how many times the tables were refilled or dropped (a plugin's kernels, a backend registered): a compiled capture
# whose patched table entries another thread's refill replaced meanwhile recorded only part of its call
TABLES_CHANGED = [0]
_warned_fallback: set = set()

class _NoCudaError(RuntimeError, AssertionError):
    """Using device 'cuda': PyTorch's AssertionError ("Torch not compiled with CUDA enabled") and a RuntimeError."""


_OTHER_FRAMEWORK_DEVICES = {"cuda": "NVIDIA CUDA", "mps": "Apple Metal", "xpu": "Intel XPU", "hip": "AMD ROCm",
                            "xla": "XLA/TPU", "meta": "shape-only meta tensors", "vulkan": "Vulkan"}
# what to install for a device type no installed plugin provides (a source checkout: pip install ./plugins/<dir>)
HINTS = {"cpu": "coretorch-cpu: `pip install coretorch-cpu` (or `pip install \"coretorch[cpu]\"`; from a "
                "source checkout `pip install ./plugins/cpu_backend`)",
         "opencl": "coretorch-opencl: `pip install coretorch-opencl` (or `pip install \"coretorch[opencl]\"`; "
                   "PoCL, a CPU OpenCL device, comes with `pip install \"coretorch-opencl[pocl]\"`; from a source "
                   "checkout `pip install ./plugins/opencl_backend`)"}


class KernelTable:
    """The kernels of one device as attributes: ``table.add(x, y)``.  Built once per device."""

    if TYPE_CHECKING:  # the kernels are attributes named by the backend: any name
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, backend, dev: Device):
        self.backend = backend
        self.device = dev
        self.type = dev.type
        self._fill()

    def _fill(self) -> None:
        """Set the entries (and what depends on them): at construction, again when plugin kernels come or go."""
        backend, dev = self.backend, self.device
        kernels = dict(backend.kernels(dev.index or 0))
        for name, per_device in list(_extra_kernels.items()):
            if dev.type in per_device:
                kernels[name] = per_device[dev.type]
        self.names = frozenset(kernels)
        # a backend whose binary kernels broadcast by themselves (numpy) skips the core's expand views
        self.native_broadcast = bool(getattr(backend, "native_broadcast", False))
        # a backend whose arrays live in host memory (numpy) reads a value back for free: ops may decide on it
        self.host_memory = bool(getattr(backend, "host_memory", False))
        self.has_iadd = "iadd" in kernels  # checked on hot paths: an attribute, not a call
        self.has_axpy = "axpy_" in kernels
        self.has_linear = "linear" in kernels and "linear_backward" in kernels
        # kernels that this device runs on the host (read back, compute in numpy, write back): shown by `coretorch
        # info`; a backend lists them in ``host_kernels`` (the opencl linalg decompositions)
        self.host_names = frozenset(getattr(backend, "host_kernels", ())) & self.names
        for name in set(PRIMITIVES) | set(_extra_kernels):
            if name not in kernels:
                setattr(self, name, _missing(name, self))
            elif name in _rnglock.KERNELS:  # a generator's state: one thread's draws at a time (see _rnglock)
                setattr(self, name, _rnglock.locked(kernels[name]))
            else:
                setattr(self, name, kernels[name])

    def has(self, name: str) -> bool:
        return name in self.names

    def __repr__(self) -> str:
        return f"<KernelTable {self.device}>"


def _missing(op: str, table: KernelTable):
    def kernel(*args, **kwargs):
        if os.environ.get("CORETORCH_FALLBACK", "") == "cpu" and table.type != "cpu":
            cpu = get_table(Device("cpu"))
            if cpu.has(op):
                if op not in _warned_fallback:
                    _warned_fallback.add(op)
                    warnings.warn(f"coretorch: op '{op}' has no kernel on device '{table.device}'; "
                                  f"running it on the CPU (CORETORCH_FALLBACK=cpu)", stacklevel=3)
                conv = [_to_cpu(a, table, cpu) for a in args]
                out = getattr(cpu, op)(*conv, **kwargs)
                return _from_cpu(out, table, cpu)
        raise NotImplementedError(
            f"Could not run '{op}' on device '{table.device}': the backend "
            f"'{getattr(table.backend, 'distribution', table.type)}' has no kernel for it. "
            f"Set CORETORCH_FALLBACK=cpu to run missing kernels on the CPU backend.")
    return kernel


def _is_native(a, table) -> bool:
    return isinstance(a, getattr(table.backend, "array_type", ()))


def _to_cpu(a, table, cpu):
    if _is_native(a, table):
        return cpu.from_numpy(table.to_numpy(a))
    if isinstance(a, (list, tuple)):
        return type(a)(_to_cpu(x, table, cpu) for x in a)
    return a


def _from_cpu(out, table, cpu):
    if isinstance(out, (list, tuple)):
        return type(out)(_from_cpu(x, table, cpu) for x in out)
    if hasattr(out, "shape") and not isinstance(out, (bool, int, float)):
        return table.from_numpy(cpu.to_numpy(out))
    return out


def register_backend(backend, distribution: str = "?") -> None:
    name = backend.name
    if name in _backends:
        other = getattr(_backends[name], "distribution", "?")
        raise ValueError(f"device type '{name}' is registered twice: by distribution '{other}' and by "
                         f"'{distribution}'; uninstall one of them")
    if not getattr(backend, "distribution", None):
        try:
            backend.distribution = distribution
        except AttributeError:
            pass
    _backends[name] = backend
    TABLES_CHANGED[0] += 1
    for dev in [d for d in list(_tables) if d.type == name]:
        _tables.pop(dev, None)


def unregister_backend(name: str) -> None:
    _backends.pop(name, None)
    TABLES_CHANGED[0] += 1
    for dev in [d for d in list(_tables) if d.type == name]:
        _tables.pop(dev, None)


def register_kernels(op: str, kernels: dict) -> None:
    """Per-device-type kernels of plugin op ``op`` (``{}`` declares the op without kernels: get_kernel knows it)."""
    _extra_kernels.setdefault(op, {}).update(kernels)
    _refresh_tables()


def unregister_kernels(op: str) -> None:
    if _extra_kernels.pop(op, None) is not None:
        _refresh_tables(gone=op)


def _refresh_tables(gone: str | None = None) -> None:
    """The existing tables rebuilt in place with the plugin kernels registered now (``gone``: an op whose entry goes).
    In place, not replaced: the tensors made before keep their device's one table, which the core compares by
    identity (a second table of the device made torch.cat of an older and a newer tensor raise 'found at least two
    devices, cpu and cpu')."""
    TABLES_CHANGED[0] += 1
    for t in {id(t): t for t in list(_tables.values())}.values():
        t._fill()
        if gone is not None and gone not in PRIMITIVES:
            t.__dict__.pop(gone, None)


def get_kernel(name: str, where):
    """The kernel ``name`` (a primitive of ``PRIMITIVES`` or a plugin op registered with ``kernels=``) for the
    device of ``where`` (a Tensor, a device or a device string).

    Raises ValueError for a name that is neither, and NotImplementedError naming op and device when the device
    has no such kernel; with ``CORETORCH_FALLBACK=cpu`` and a CPU kernel of that name, returns a kernel that runs
    on the CPU instead (arrays copied there and back, a one-time warning per op), as core ops do."""
    if name not in PRIMITIVES and name not in _extra_kernels:
        close = difflib.get_close_matches(name, [*PRIMITIVES, *_extra_kernels], n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"get_kernel(): unknown kernel '{name}': neither a primitive of the backend contract nor "
                         f"an op registered by a plugin{hint}")
    table = getattr(where, "_be", None)
    if not isinstance(table, KernelTable):
        table = get_table(where)
    elif name not in table.names and _tables.get(table.device) is not table:
        table = get_table(table.device)  # a tensor made before a plugin registered the kernel: the current table
    if name in table.names:
        return getattr(table, name)
    if os.environ.get("CORETORCH_FALLBACK", "") == "cpu" and table.type != "cpu" and "cpu" in _backends \
            and get_table(Device("cpu")).has(name):
        return getattr(table, name)  # the missing-kernel stub: it runs the CPU kernel (see _missing)
    where_else = sorted(_extra_kernels.get(name, {}))
    have = f" (kernels exist for device types: {', '.join(where_else)})" if where_else else ""
    raise NotImplementedError(f"Could not run '{name}' on device '{table.device}': the backend "
                              f"'{getattr(table.backend, 'distribution', table.type)}' has no kernel for it and no "
                              f"plugin registered one for device type '{table.type}'{have}. Set "
                              "CORETORCH_FALLBACK=cpu to run it on the CPU backend.")


def backends() -> dict:
    return dict(_backends)


def get_table(dev) -> KernelTable:
    """Kernel table for a device (cached)."""
    t = _tables.get(dev)
    if t is not None:
        return t
    dev = Device(dev) if not isinstance(dev, Device) else dev
    t = _tables.get(dev)
    if t is not None:
        return t
    be = _backends.get(dev.type)
    if be is None:
        hint = HINTS.get(dev.type)
        if hint:
            raise RuntimeError(f"no backend for device type '{dev.type}' is installed; install {hint}")
        installed = ', '.join(sorted(_backends)) or 'none'
        if dev.type in _OTHER_FRAMEWORK_DEVICES:  # PyTorch's device types that coretorch has no backend for
            # CUDA: PyTorch without CUDA raises AssertionError("Torch not compiled with CUDA enabled"), which scripts
            # catch; ours is both that and a RuntimeError
            exc = _NoCudaError if dev.type == "cuda" else RuntimeError
            raise exc(("Torch not compiled with CUDA enabled: " if dev.type == "cuda" else "")
                      + f"coretorch has no '{dev.type}' backend ({_OTHER_FRAMEWORK_DEVICES[dev.type]}): the "
                      + f"device types installed here are {installed}. Use device='opencl' for a GPU "
                      f"through OpenCL (torch.accelerator.current_accelerator() names it) or 'cpu'")
        raise RuntimeError(f"unknown device type '{dev.type}': no installed backend provides it "
                           f"(installed: {installed})")
    if not be.is_available():
        why = getattr(be, "unavailable_reason", None)
        why = why() if callable(why) else ""
        raise RuntimeError(f"device type '{dev.type}' is installed but not available on this machine"
                           + (f": {why}" if why else ""))
    if dev.index is not None and dev.index >= be.device_count():
        raise RuntimeError(f"device '{dev}' does not exist: {dev.type} has {be.device_count()} device(s)")
    canon = Device(dev.type, dev.index) if dev.type != "cpu" else Device("cpu")
    if dev.type != "cpu" and dev.index is None:
        canon = Device(dev.type, 0)
    t = _tables.get(canon)
    if t is None:
        made = KernelTable(be, canon)
        with _TABLES_LOCK:  # threads first using a device at once: one table (ops tell devices apart by table)
            t = _tables.get(canon)
            if t is None:
                t = _tables[canon] = made
    _tables[dev] = t
    return t
