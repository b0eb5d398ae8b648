"""Further families of random program steps for coretorch/testing_fuzz.py: sorting and selection (sort/argsort
with ties, topk smallest, cummax/cummin indices, searchsorted/bucketize, mode, unique counts, quantile), indexing with
negative and boolean index tensors (2-D index tensors, two broadcast index lists, masks over leading dims, lists of
bools) read and written, reductions over negative dims, tuples of dims and ``dim=()`` with ``keepdim``, and dtype
promotion across uint8/int8/int16/bool/float16/bfloat16.

Needs only numpy and never imports coretorch (the oracle loads it by path in a PyTorch process);
``families(fz)`` takes the testing_fuzz module for its helpers and returns ``(generator, weight)`` pairs.
"""
from __future__ import annotations

import math
from typing import Any

_fz: Any = None  # the testing_fuzz module (set by families())




def gen_sortsel(rng, env):
    """Sorting and selection with PyTorch's tie and NaN rules (values and indices where they are defined)."""
    fz = _fz
    x = fz._pick(rng, env)
    shape = env[x][1]
    rank = len(shape)
    d = fz._dim(rng, rank)
    op = rng.choice(("sort", "argsort", "topk_small", "msort", "cummax", "cummin", "searchsorted", "bucketize",
                     "mode", "unique_counts", "unique_consecutive", "argmax_ties", "max_indices", "quantile",
                     "nanquantile", "sort_bool"))
    if op == "sort":
        desc = rng.random() < 0.5
        part = rng.choice((".values", ".indices"))
        return f"torch.sort({x}, dim={d}, descending={desc}, stable=True){part}", "sort", [x], None
    if op == "argsort":
        return f"torch.argsort({x}, dim={d}, descending={rng.random() < 0.5}, stable=True)", op, [x], None
    if op == "topk_small":
        k = rng.randint(0, shape[d] if rank else 1)
        return f"torch.topk({x}, {k}, dim={d}, largest=False).values", "topk", [x], None
    if op == "msort":
        return f"torch.msort({x})", op, [x], None
    if op in ("cummax", "cummin"):
        return f"torch.{op}({x}, {d})[{rng.randint(0, 1)}]", op, [x], None
    if op in ("searchsorted", "bucketize"):
        y = fz._operand(rng, env, x, scalar=False)
        side = rng.random() < 0.5
        if op == "searchsorted":
            return f"torch.searchsorted(torch.sort({x}.flatten()).values, {y}, right={side})", op, [x, y], None
        return f"torch.bucketize({y}, torch.sort({x}.flatten()).values, right={side})", op, [x, y], None
    if op == "mode":
        return f"torch.mode({x}, {d}).values", op, [x], None
    if op == "unique_counts":
        return f"torch.unique({x}, sorted=True, return_counts=True)[{rng.randint(0, 1)}]", "unique", [x], None
    if op == "unique_consecutive":
        return f"torch.unique_consecutive({x}.flatten())", op, [x], None
    if op == "argmax_ties":   # rounded so ties are common: the first index wins
        f = rng.choice(("argmax", "argmin"))
        return f"torch.{f}(({x} * 0.5).round(){'' if rank == 0 else f', dim={d}'})", f, [x], None
    if op == "max_indices":
        f = rng.choice(("max", "min"))
        return f"torch.{f}(({x} > 0).to(torch.int32), {d}).indices", f, [x], None
    if op in ("quantile", "nanquantile"):
        q = rng.choice(("0.25", "0.5", "torch.tensor([0.0, 0.75, 1.0], dtype={x}.dtype, device=DEV)"))
        q = q.format(x=x)
        interp = rng.choice(("linear", "lower", "higher", "midpoint", "nearest"))
        dim = f", dim={d}" if rank and rng.random() < 0.6 else ""
        return f"torch.{op}({x}, {q}{dim}, interpolation={interp!r})", op, [x], None
    return f"torch.sort({x} > 0, dim={d}, stable=True).indices", "sort", [x], None


def _neg_index(rng, size: int) -> int:
    return rng.randint(-size, size - 1)


def _adv_key(rng, shape: tuple) -> str:
    """A subscript with negative index tensors, 2-D index tensors, two broadcast index lists, masks over leading
    dims or a list of bools."""
    rank = len(shape)
    r = rng.random()
    if r < 0.2 and rank and shape[0]:
        k = rng.randint(1, 3)
        return f"torch.tensor({[_neg_index(rng, shape[0]) for _ in range(k)]!r}, device=DEV)"
    if r < 0.35 and rank and shape[0]:
        vals = [[_neg_index(rng, shape[0]) for _ in range(2)] for _ in range(rng.randint(1, 2))]
        return f"torch.tensor({vals!r}, device=DEV)"
    if r < 0.5 and rank >= 2 and shape[0] and shape[1]:
        k = rng.randint(1, 2)
        a = [_neg_index(rng, shape[0]) for _ in range(k)]
        b = [_neg_index(rng, shape[1]) for _ in range(rng.choice((1, k)))]
        return f"{a!r}, {b!r}"
    if r < 0.6 and rank >= 2 and shape[1]:
        return f":, {[_neg_index(rng, shape[1]) for _ in range(rng.randint(1, 2))]!r}"
    if r < 0.75 and rank:
        lead = rng.randint(1, rank)
        m = [rng.random() < 0.5 for _ in range(math.prod(shape[:lead]))]
        mask = f"torch.tensor({_fz._nested(m, shape[:lead])}, device=DEV)"
        return mask if rng.random() < 0.7 else f"None, {mask}"
    if r < 0.85 and rank and shape[0]:
        return repr([rng.random() < 0.5 for _ in range(shape[0])])
    if r < 0.92 and rank and shape[-1]:
        return f"..., {_neg_index(rng, shape[-1])}"
    if rank and shape[0]:
        return f"torch.tensor({_neg_index(rng, shape[0])}, device=DEV)"
    return "..."


def gen_index_neg(rng, env):
    """Reads with negative and boolean index tensors (and their out-of-range errors)."""
    fz = _fz
    x = fz._pick(rng, env)
    shape = env[x][1]
    rank = len(shape)
    r = rng.random()
    if r < 0.7:
        return f"{x}[{_adv_key(rng, shape)}]", "getitem:adv", [x], None
    d = fz._dim(rng, rank)
    size = shape[d] if rank else 1
    if r < 0.8:
        idx = [rng.randint(-size - 1, size) for _ in range(rng.randint(1, 2))]   # may be out of range
        return f"{x}[{'..., ' if rank > 1 and rng.random() < 0.5 else ''}torch.tensor({idx!r}, device=DEV)]", \
            "getitem:range", [x], None
    if r < 0.9 and rank:
        ish = list(shape)
        ish[d] = rng.randint(1, 2)
        vals = [rng.randint(-size, max(size - 1, 0)) for _ in range(math.prod(ish))]
        return f"torch.take_along_dim({x}, torch.tensor({fz._nested(vals, tuple(ish))}, device=DEV), dim={d})", \
            "take_along_dim", [x], None
    idx = [rng.randint(-size, max(size - 1, 0)) for _ in range(rng.randint(0, 2))]
    return f"torch.index_select({x}, {d}, torch.tensor({idx!r}, dtype=torch.int64, device=DEV))", \
        "index_select", [x], None


def gen_setitem_neg(rng, env, name: str):
    """Writes through negative and boolean index tensors: a scalar, a 0-d tensor or a broadcast tensor value."""
    fz = _fz
    x = fz._pick(rng, env)
    shape = env[x][1]
    key = _adv_key(rng, shape)
    r = rng.random()
    if r < 0.5:
        val = fz._scalar(rng)
    elif r < 0.75:
        val = f"torch.tensor({fz._scalar(rng)}, dtype={name}.dtype, device=DEV)"
    else:
        val = f"{name}[{key}].flip(0) * 2" if rng.random() < 0.5 else f"{name}[{key}] + 1"
    return f"{name} = {x}.clone(); {name}[{key}] = {val}", "setitem:adv", [x]


gen_setitem_neg.statement = True  # type: ignore[attr-defined]  # the marker run_program reads


_RED = ("sum", "mean", "amax", "amin", "std", "var", "norm", "logsumexp", "any", "all", "count_nonzero", "nansum",
        "prod", "nanmean", "aminmax", "vector_norm")


def gen_reduce_dims(rng, env):
    """Reductions over negative dims, tuples (and lists) of dims, ``dim=()``, repeated dims, with ``keepdim``."""
    fz = _fz
    x = fz._pick(rng, env)
    rank = len(env[x][1])
    op = rng.choice(_RED)
    r = rng.random()
    if r < 0.15:
        dims = "()" if rng.random() < 0.6 else "[]"
    elif r < 0.25 and rank:
        dd = fz._dim(rng, rank)
        dims = f"({dd}, {dd if rng.random() < 0.5 else dd - rank if dd >= 0 else dd + rank})"   # repeated
    elif rank >= 2:
        ds = rng.sample(range(-rank, 0), rng.randint(1, rank))
        dims = repr(tuple(ds)) if rng.random() < 0.7 else repr(ds)
    else:
        dims = repr(fz._dim(rng, rank))
    if op in ("prod",):   # one dim only
        dims = repr(fz._dim(rng, rank))
    keep = rng.random() < 0.5
    if op == "norm":
        p = rng.choice(("1", "2", "float('inf')", "-float('inf')", "0", "3"))
        return f"torch.norm({x}, p={p}, dim={dims}, keepdim={keep})", op, [x], None
    if op == "vector_norm":
        p = rng.choice(("1", "2", "float('inf')", "0"))
        return f"torch.linalg.vector_norm({x}, {p}, dim={dims}, keepdim={keep})", op, [x], None
    if op == "aminmax":
        return f"torch.aminmax({x}, dim={fz._dim(rng, rank)}, keepdim={keep})[{rng.randint(0, 1)}]", op, [x], None
    if op == "count_nonzero":
        return f"torch.count_nonzero({x}, dim={dims})", op, [x], None
    if op in ("std", "var"):
        return f"torch.{op}({x}, dim={dims}, correction={rng.randint(0, 1)}, keepdim={keep})", op, [x], None
    return f"torch.{op}({x}, dim={dims}, keepdim={keep})" if rng.random() < 0.5 else \
        f"{x}.{op}({dims}, keepdim={keep})", op, [x], None


_PDT = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_PROMOTE_OPS2 = ("+", "*", "-", "/", "<", "==", "//", "%", "maximum", "where", "cat", "add_", "mul_", "eq_t", "max",
                 "addcmul", "lerp", "fmod")


def gen_promote2(rng, env):
    """Binary ops between tensors converted to uint8/int8/int16/bool/float16/bfloat16 (int8 with uint8 is int16,
    float16 with bfloat16 is float32, ...), 0-d and dimensioned, with PyTorch's result dtypes and errors."""
    fz = _fz
    x = fz._pick(rng, env)
    y = fz._operand(rng, env, x, scalar=False)
    da, db = rng.choice(_PDT), rng.choice(_PDT)
    a = f"{x}.to(torch.{da})"
    b = f"{y}.to(torch.{db})" if rng.random() < 0.7 else f"{y}.to(torch.{db}).sum().to(torch.{db})"   # 0-d
    if rng.random() < 0.3:
        a, b = b, a
    op = rng.choice(_PROMOTE_OPS2)
    if op == "maximum":
        return f"torch.maximum({a}, {b})", "promote2:maximum", [x, y], None
    if op == "where":
        return f"torch.where({x} > 0, {a}, {b})", "promote2:where", [x, y], None
    if op == "cat":
        return f"torch.cat([{x}.to(torch.{da}).flatten(), {y}.to(torch.{db}).flatten()])", "promote2:cat", [x, y], \
            None
    if op in ("add_", "mul_"):   # in place: the result dtype must cast to the destination's
        return f"{a}.clone().{op}({b})", f"promote2:{op}", [x, y], None
    if op == "eq_t":
        return f"torch.eq({a}, {b})", "promote2:eq", [x, y], None
    if op == "max":
        return f"torch.max({a}, {b})", "promote2:max", [x, y], None
    if op == "addcmul":
        return f"torch.addcmul({x}.to(torch.{da}), {a}, {b})", "promote2:addcmul", [x, y], None
    if op == "lerp":
        return f"torch.lerp({a}, {b}, 0.5)", "promote2:lerp", [x, y], None
    if op == "fmod":
        return f"torch.fmod({a}, {b})", "promote2:fmod", [x, y], None
    return f"({a}) {op} ({b})", "promote2:" + op, [x, y], None


def families(fz) -> tuple:
    """The generators of this module with their weights (testing_fuzz's own weights and testing_fuzz_families'
    sum to 39)."""
    global _fz
    _fz = fz
    return ((gen_sortsel, 2), (gen_index_neg, 2), (gen_setitem_neg, 1), (gen_reduce_dims, 2), (gen_promote2, 2))
