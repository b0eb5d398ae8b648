"""OpCases of the random family (coretorch.ops.random); part of coretorch.testing.CASES.

Samples are random, so these cases pick parameters whose outcome is certain (std 0, probability 0 or 1, rate 0,
one-hot weights, ranges of one value): they check shapes, dtypes, devices, layouts, broadcasting, PyTorch's
zero gradients (vjp_ref) and errors on every device; the distributions themselves are checked statistically in
tests/test_random.py.
"""
from __future__ import annotations

import numpy as np

import coretorch
from coretorch.testing import FLOAT_DTYPES, Arg, OpCase


def _zeros_vjp(g, *arrays):
    return tuple(np.zeros(a.shape) for a in arrays)


def _one_hot(x):
    return (x == x.amax(-1, keepdim=True)).to(x.dtype)


def _argmax_col(x, k=1):
    return np.repeat(np.argmax(x, axis=-1)[..., None], k, axis=-1).astype(np.int64)


CASES: list[OpCase] = [
    # normal's overloads: std 0 gives the mean; PyTorch's gradients are zero (derivatives.yaml)
    OpCase("normal.tensor_tensor", lambda m, s: coretorch.normal(m, s * 0),
           lambda m, s: (m + 0 * s), (Arg((3, 4)), Arg((4,), layout="s")), vjp_ref=_zeros_vjp),
    OpCase("normal.tensor_float", lambda m: coretorch.normal(m, 0.0), lambda m: m, (Arg((2, 3, 2), layout="t"),),
           vjp_ref=_zeros_vjp),
    OpCase("normal.float_tensor", lambda s: coretorch.normal(1.5, s * 0), lambda s: np.full_like(s, 1.5),
           (Arg((5,)),), vjp_ref=_zeros_vjp),
    OpCase("normal.empty", lambda m: coretorch.normal(m, 2.0), lambda m: m, (Arg((0, 3)),), vjp_ref=_zeros_vjp),
    OpCase("normal.negative_std", lambda m, s: coretorch.normal(m, -1 - s.abs()), None, (Arg(), Arg()),
           raises=RuntimeError, grad=False),
    # bernoulli / poisson with certain outcomes
    OpCase("bernoulli.zeros", lambda p: coretorch.bernoulli(p), lambda p: p, (Arg((3, 4), "zeros", layout="t"),),
           vjp_ref=_zeros_vjp),
    OpCase("bernoulli.p_one", lambda x: coretorch.bernoulli(x, 1.0), lambda x: np.ones_like(x), (Arg((4, 3)),),
           vjp_ref=_zeros_vjp),
    OpCase("bernoulli_.ones_tensor_p", lambda x: x.clone().bernoulli_(x * 0 + 1), lambda x: np.ones_like(x),
           (Arg((2, 5), requires_grad=False, layout="s"),), grad=False),
    OpCase("bernoulli_.int_p_zero", lambda x: x.clone().bernoulli_(0.0), lambda x: np.zeros_like(x),
           (Arg((6,), dtype="int64", requires_grad=False),), grad=False),
    OpCase("bernoulli_.p_out_of_range", lambda x: x.clone().bernoulli_(1.5), None, (Arg(requires_grad=False),),
           raises=RuntimeError, grad=False),
    OpCase("poisson.zero_rates", lambda r: coretorch.poisson(r), lambda r: r, (Arg((3, 2), "zeros"),),
           vjp_ref=_zeros_vjp),
    OpCase("poisson.int", lambda r: coretorch.poisson(r), None, (Arg((3,), dtype="int64", requires_grad=False),),
           raises=RuntimeError, grad=False),
    # multinomial: one-hot rows have one outcome, with or without replacement
    OpCase("multinomial.one_hot", lambda x: coretorch.multinomial(_one_hot(x), 1), _argmax_col,
           (Arg((4, 6), "distinct", requires_grad=False),), grad=False),
    OpCase("multinomial.one_hot_replacement", lambda x: coretorch.multinomial(_one_hot(x), 3, True),
           lambda x: _argmax_col(x, 3), (Arg((5, 3), "distinct", requires_grad=False, layout="t"),), grad=False),
    OpCase("multinomial.one_hot_1d", lambda x: _one_hot(x).multinomial(2, True), lambda x: _argmax_col(x, 2),
           (Arg((7,), "distinct", requires_grad=False),), grad=False),
    # without replacement, drawing every category: each index once, so a row's indices sum to 0 + 1 + ... + 5
    OpCase("multinomial.all_categories", lambda x: coretorch.multinomial(x.abs() + 0.5, 6).sum(-1),
           lambda x: np.full(3, 15, np.int64), (Arg((3, 6), requires_grad=False),), dtypes=("float32",),
           grad=False),
    OpCase("multinomial.negative", lambda x: coretorch.multinomial(x, 2), None, (Arg((3, 4), requires_grad=False),),
           raises=RuntimeError, grad=False),
    OpCase("multinomial.too_many", lambda x: coretorch.multinomial(x.abs(), 5), None,
           (Arg((4,), "positive", requires_grad=False),), raises=RuntimeError, grad=False),
    OpCase("multinomial.three_dims", lambda x: coretorch.multinomial(x, 1), None,
           (Arg((2, 2, 2), "positive", requires_grad=False),), raises=RuntimeError, grad=False),
    OpCase("multinomial.zero_row", lambda x: coretorch.multinomial(x * 0, 1, True), None,
           (Arg((2, 3), "positive", requires_grad=False),), raises=RuntimeError, grad=False),
    # samplers with one possible value per element
    OpCase("rand_like.floor", lambda x: coretorch.rand_like(x).floor(), lambda x: np.zeros_like(x),
           (Arg((64, 33), requires_grad=False, layout="t"),), grad=False),
    OpCase("randint_like.one_value", lambda x: coretorch.randint_like(x, 3, 4), lambda x: np.full_like(x, 3),
           (Arg((3, 5), dtype="int64", requires_grad=False),), grad=False),
    OpCase("random_.one_value", lambda x: x.clone().random_(-2, -1), lambda x: np.full_like(x, -2),
           (Arg((4, 4), requires_grad=False, layout="s"),), dtypes=FLOAT_DTYPES + ("int32", "int8"), grad=False),
    OpCase("uniform_.point", lambda x: x.clone().uniform_(0.25, 0.25), lambda x: np.full_like(x, 0.25),
           (Arg((3, 7), requires_grad=False, layout="t"),), grad=False),
    OpCase("uniform_.int", lambda x: x.clone().uniform_(), None, (Arg(dtype="int64", requires_grad=False),),
           raises=RuntimeError, grad=False),
    OpCase("exponential_.bad_rate", lambda x: x.clone().exponential_(0.0), None, (Arg(requires_grad=False),),
           raises=RuntimeError, grad=False),
    OpCase("geometric_.bad_p", lambda x: x.clone().geometric_(1.0), None, (Arg(requires_grad=False),),
           raises=RuntimeError, grad=False),
    OpCase("cauchy_.bad_sigma", lambda x: x.clone().cauchy_(0.0, -1.0), None, (Arg(requires_grad=False),),
           raises=RuntimeError, grad=False),
    OpCase("log_normal_.bad_std", lambda x: x.clone().log_normal_(1.0, 0.0), None, (Arg(requires_grad=False),),
           raises=RuntimeError, grad=False),
    # binomial: prob 1 gives the count, prob 0 or a count <= 0 gives 0 (prob broadcast over count's rows);
    # its draws are not differentiable
    OpCase("binomial.certain", lambda c, p: coretorch.binomial(c.abs().round(), (p > 0).to(c.dtype)),
           lambda c, p: np.where(p > 0, np.round(np.abs(c)), 0.0), (Arg((3, 4), layout="t"), Arg((4,))),
           dtypes=("float32", "float64"), grad=False, nondiff=True),
    OpCase("binomial.nonpositive_count", lambda c: coretorch.binomial(-c.abs(), c * 0 + 0.5),
           lambda c: np.zeros_like(c), (Arg((2, 5), layout="s"),), dtypes=("float32", "float64"), grad=False,
           nondiff=True),
    OpCase("binomial.int_count", lambda c: coretorch.binomial(c, c.float()), None,
           (Arg((3,), dtype="int64", requires_grad=False),), raises=ValueError, grad=False),
]
