"""Random op programs for differential testing (coretorch vs numpy, vs another device, vs PyTorch).

A program is Python source over the common tensor API (``torch.add(x0, x1, alpha=2)``, ``x2[0, [1, 0]] = 3``,
...), built step by step from a ``random.Random`` seed. Each step is chosen from the shapes and dtypes the
previous steps produced, so one seed gives the same program on every implementation as long as they agree; the
comparison stops at the first step where they do not. The module needs only numpy (no coretorch import: the
oracle script loads it by path in a PyTorch process), and ``run_program`` takes the torch-like module to run on.
The comparison of two runs is coretorch/testing_fuzz_compare.py.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
import pathlib
import random
import sys
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

__all__ = ["Step", "Result", "run_program", "BUILTIN_ERRORS"]

INTS = ("uint8", "int8", "int32", "int64")
FLOATS = ("float16", "float32", "float64")
DTYPES = ("bool",) + INTS + FLOATS
_DTYPE_WEIGHTS = (1, 1, 1, 1, 2, 1, 5, 2)
# NotImplementedError (PyTorch's "not implemented for 'Bool'") is a RuntimeError: both compare as RuntimeError.
BUILTIN_ERRORS = (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError, RuntimeError)

# Classes that another change fixes: the generator avoids them (the caller decides; the oracle measures all).
KNOWN_CLASSES: frozenset = frozenset()


@dataclass
class Step:
    """What one statement did: its source, the op family tag, and the new variable's summary or the error."""
    src: str
    op: str
    kind: str
    error: str | None = None
    dtype: str | None = None
    shape: tuple | None = None
    requires_grad: bool | None = None
    value: np.ndarray | None = None
    expected: np.ndarray | None = None  # numpy reference where a cheap one exists


@dataclass
class Result:
    seed: int
    steps: list = field(default_factory=list)
    final: dict = field(default_factory=dict)   # name -> value of every variable after the program (aliasing)
    grads: dict = field(default_factory=dict)   # leaf name -> gradient of the weighted sum (or None)
    grad_error: str | None = None
    grad_message: str | None = None   # the backward error's text (the oracle tells deliberate differences by it)

    @property
    def source(self) -> str:
        return "\n".join(s.src for s in self.steps)


def error_class(e: BaseException) -> str:
    """The builtin class an exception is (library-specific subclasses compare by their builtin base)."""
    for cls in BUILTIN_ERRORS:
        if isinstance(e, cls):
            return cls.__name__
    return type(e).__name__


def _dname(t) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def _host(t) -> np.ndarray:
    t = t.detach().cpu()
    if _dname(t) == "bfloat16":   # numpy has no bfloat16 of its own (PyTorch's .numpy() refuses it): exact in float32
        t = t.float()
    return np.array(t.numpy(), copy=True)


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _value(rng: random.Random, dt: str, special: bool):
    if dt == "bool":
        return rng.random() < 0.5
    if dt == "uint8":
        return rng.randint(0, 12)
    if dt in INTS:
        return rng.randint(-6, 6)
    if special and rng.random() < 0.08:
        return rng.choice(("nan", "inf", "-inf", 0.0, -0.0, 1e30 if dt != "float16" else 60000.0))
    return round(rng.uniform(-3, 3) * 4) / 4 if rng.random() < 0.5 else round(rng.uniform(-3, 3), 3)


def _lit(v) -> str:
    return v if isinstance(v, str) else repr(v)  # "nan" / "inf" / "-inf" are names in the program's namespace


def _nested(vals: list, shape: tuple) -> str:
    if not shape:
        return _lit(vals[0])
    n = len(vals) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(vals[i * n:(i + 1) * n], shape[1:]) for i in range(shape[0])) + "]"


def _shape(rng: random.Random, base: tuple) -> tuple:
    r = rng.random()
    if r < 0.08:
        return ()
    if r < 0.14:
        return tuple(rng.choice((0, 2, 3)) for _ in range(rng.randint(1, 2)))
    if r < 0.25:
        return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
    k = rng.randint(1, len(base))
    return tuple(d if rng.random() < 0.75 else 1 for d in base[len(base) - k:])


def _input_src(rng: random.Random, name: str, special: bool) -> str:
    base = tuple(rng.randint(1, 4) for _ in range(3))
    shape = _shape(rng, base)
    dt = rng.choices(DTYPES, _DTYPE_WEIGHTS)[0]
    grad = dt in ("float32", "float64") and rng.random() < 0.7
    n = math.prod(shape)
    g = ", requires_grad=True" if grad else ""
    if n == 0:
        return f"{name} = torch.zeros({shape}, dtype=torch.{dt}, device=DEV{g})"
    vals = [_value(rng, dt, special) for _ in range(n)]
    return f"{name} = torch.tensor({_nested(vals, shape)}, dtype=torch.{dt}, device=DEV{g})"


# ---------------------------------------------------------------------------------------------
# op generators: (rng, env) -> (source of the right-hand side or statement, op tag, arg names, numpy ref)
# env: name -> (dtype name, shape, requires_grad, is_leaf)
# ---------------------------------------------------------------------------------------------
_UNARY = ("abs", "neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "floor", "ceil", "round",
          "trunc", "sign", "reciprocal", "square", "exp2", "expm1", "log1p", "rsqrt", "erf", "frac", "logical_not",
          "bitwise_not", "isnan", "isinf", "isfinite", "nan_to_num", "sgn", "atan", "asinh", "log2", "sinh")
_NP_UNARY = {"abs": np.abs, "neg": np.negative, "exp": np.exp, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
             "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "square": np.square, "atan": np.arctan,
             "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "logical_not": np.logical_not}
_BINARY = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "maximum",
           "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
           "bitwise_and", "bitwise_or", "bitwise_xor", "hypot", "copysign", "fmax", "fmin")
_TENSOR_ONLY = ("maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "logical_and", "logical_or",
                "logical_xor")
_OPERATORS = ("+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<", "==", ">=", "!=")
_NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
              "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
              "ge": np.greater_equal, "+": np.add, "*": np.multiply, "<": np.less, "==": np.equal}
_REDUCE = ("sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var", "norm",
           "logsumexp", "all", "any", "cumsum", "cumprod", "nansum", "count_nonzero", "median", "logcumsumexp")
_INPLACE = ("add_", "sub_", "mul_", "div_", "clamp_", "fill_", "zero_", "copy_", "+=", "*=", "-=", "relu_",
            "abs_", "neg_", "masked_fill_", "setitem", "exp_", "pow_")


def _scalar(rng: random.Random, env_dt: str | None = None) -> str:
    r = rng.random()
    if r < 0.4:
        return repr(rng.randint(-3, 4))
    if r < 0.85:
        return repr(rng.choice((0.5, -1.5, 2.0, 0.25, 3.75, 1e-3, 100.0)))
    return repr(rng.random() < 0.5)


def _dim(rng: random.Random, rank: int) -> int:
    return rng.randint(-rank, rank - 1) if rank else rng.choice((0, -1))


def _kind(env: dict, names) -> str:
    parts = []
    for n in names:
        if n not in env:
            parts.append("scalar:" + ("bool" if n in ("True", "False") else "float" if "." in n or "e" in n
                                      else "int"))
            continue
        dt, shape = env[n][0], env[n][1]
        tag = dt + ("[0d]" if not shape else "[empty]" if 0 in shape else "")
        parts.append(tag + ("[host]" if env[n][4] else ""))
    return ",".join(parts)


def _pick(rng: random.Random, env: dict, pred=None) -> str | None:
    names = [n for n in env if pred is None or pred(env[n])]
    return rng.choice(names) if names else None


def _index_expr(rng: random.Random, shape: tuple, allow_adv: bool = True) -> str:
    """A subscript for a tensor of ``shape``: ints, slices, None, Ellipsis, index lists, bool masks."""
    if not shape:
        return rng.choice(("...", "None", "()"))
    parts, i = [], 0
    used_adv = False
    while i < len(shape) and rng.random() < 0.8:
        d = shape[i]
        r = rng.random()
        if r < 0.25 and d:
            parts.append(repr(rng.randint(-d, d - 1)))
        elif r < 0.55:
            a = rng.choice((None, 0, 1, -1))
            b = rng.choice((None, d, -1, 2))
            s = rng.choice((None, 1, 2))
            parts.append(f"{'' if a is None else a}:{'' if b is None else b}" + (f":{s}" if s else ""))
        elif r < 0.62:
            parts.append("None")
            continue
        elif allow_adv and not used_adv and d and r < 0.85:
            k = rng.randint(1, 3)
            parts.append(repr([rng.randint(-d, d - 1) for _ in range(k)]))
            used_adv = True
        elif allow_adv and not used_adv and r < 0.95:
            parts.append("torch.tensor(" + repr([rng.random() < 0.5 for _ in range(d)]) + ", device=DEV)")
            used_adv = True
        else:
            parts.append(":")
        i += 1
    if rng.random() < 0.1:
        parts.append("...")
    return ", ".join(parts) if parts else "..."


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca != cb:
        return a if ca > cb else b
    return (a if a.itemsize >= b.itemsize else b) if ca == 2 else np.promote_types(a, b)


def torch_result_type(*arrays) -> np.dtype | None:
    """PyTorch's result dtype of ndarrays: dimensioned operands outrank 0-d ones unless the 0-d ones are of a
    higher category (float over int over bool)."""
    dim = [a.dtype for a in arrays if a.ndim]
    zero = [a.dtype for a in arrays if not a.ndim]
    hi: np.dtype | None = None
    lo: np.dtype | None = None
    for d in dim:
        hi = d if hi is None else _promote(hi, d)
    for d in zero:
        lo = d if lo is None else _promote(lo, d)
    if hi is None or lo is None:
        return hi if lo is None else lo
    return _promote(hi, lo) if _CATEGORY[lo.kind] > _CATEGORY[hi.kind] else hi


def _binary_ref(f, p, q):
    r = np.asarray(f(p, q))
    return r if r.dtype == bool else r.astype(torch_result_type(p, q))


def _reduce_ref(f, dim, keep, a):
    return np.asarray(f(a, axis=dim, keepdims=keep)).astype(a.dtype)


def _reshape_ref(new, a):
    return a.reshape(new)


def _transpose_ref(p, a):
    return np.transpose(a, p)


def _swap_ref(d, d2, a):
    return np.swapaxes(a, d, d2)


def _gen_unary(rng, env):
    x = _pick(rng, env)
    op = rng.choice(_UNARY)
    dt = env[x][0]
    ref = None
    if op in _NP_UNARY and dt in ("float32", "float64"):
        f = _NP_UNARY[op]
        ref = f
    if op == "nan_to_num":
        return f"torch.nan_to_num({x}, nan=0.5, posinf=9.0)", op, [x], None
    form = rng.random()
    return (f"{x}.{op}()" if form < 0.4 else f"torch.{op}({x})"), op, [x], ref


def _operand(rng, env, other: str, scalar: bool = True) -> str:
    """A second operand broadcastable with ``other`` (another variable of fitting shape, or a Python scalar)."""
    shape = env[other][1]
    fits = [n for n in env if n != other and _broadcasts(env[n][1], shape)]
    if fits and rng.random() < 0.65:
        return rng.choice(fits)
    if rng.random() < 0.15 or not scalar:
        pick = _pick(rng, env)
        assert pick is not None  # env holds ``other``
        return pick
    return _scalar(rng)


def _broadcasts(a: tuple, b: tuple) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def _gen_binary(rng, env):
    x = _pick(rng, env)
    y = _operand(rng, env, x)
    a, b = (x, y) if rng.random() < 0.8 else (y, x)
    if rng.random() < 0.35:
        op = rng.choice(_OPERATORS)
        src = f"{a} {op} {b}"
        if a not in env:   # a Python scalar on the left goes through __r<op>__
            src = f"({a}) {op} {b}"
    else:
        op = rng.choice(_BINARY)
        if a not in env:
            a, b = b, a
        if op in _TENSOR_ONLY and b not in env:   # PyTorch's signature takes no Python number there
            b = _pick(rng, env)
        kw = ""
        if op in ("add", "sub") and rng.random() < 0.3:
            kw = f", alpha={rng.choice((2, -1, 0.5))}"
        if op == "div" and rng.random() < 0.4:
            kw = f", rounding_mode={rng.choice(('trunc', 'floor'))!r}"
        src = f"torch.{op}({a}, {b}{kw})"
    names = [n for n in (a, b)]
    ref = None
    if op in _NP_BINARY and all(n in env and env[n][0] in ("float32", "float64") for n in names) \
            and "alpha" not in src:
        ref = partial(_binary_ref, _NP_BINARY[op])
    return src, op, names, ref


def _gen_reduce(rng, env):
    x = _pick(rng, env)
    op = rng.choice(_REDUCE)
    rank = len(env[x][1])
    r = rng.random()
    if op in ("cumsum", "cumprod", "logcumsumexp"):
        args = f"{_dim(rng, rank)}"
    elif op in ("argmax", "argmin", "max", "min", "median") and r < 0.4:
        args = ""
    elif op in ("sum", "mean", "amax", "amin", "nansum", "logsumexp", "std", "var", "norm", "count_nonzero") \
            and rank > 1 and r < 0.3:
        args = "dim=(0, -1)"
    elif op == "logsumexp":
        args = f"{_dim(rng, rank)}"
    else:
        args = f"dim={_dim(rng, rank)}" if op not in ("all", "any") or rng.random() < 0.7 else ""
    if args and op not in ("cumsum", "cumprod", "logcumsumexp", "count_nonzero") and rng.random() < 0.4:
        args += ", keepdim=True"
    if op == "sum" and rng.random() < 0.2:
        args += (", " if args else "") + f"dtype=torch.{rng.choice(('float64', 'int64', 'float32'))}"
    if op in ("std", "var") and rng.random() < 0.3:
        args += (", " if args else "") + "correction=0"
    src = f"torch.{op}({x}{', ' + args if args else ''})" if rng.random() < 0.5 else \
        f"{x}.{op}({args})"
    if op in ("max", "min", "median") and "dim" in args:
        src += rng.choice((".values", "[1]", "[0]"))
    elif op in ("max", "min", "median") and args and args[0] in "-0123456789":
        src += ".values"
    ref = None
    if op in ("sum", "amax", "amin") and env[x][0] in ("float32", "float64") and "dtype" not in args \
            and env[x][1] and 0 not in env[x][1]:
        keep = "keepdim" in args
        dim = eval(args.split("dim=")[1].split(", keepdim")[0]) if "dim=" in args else None
        f = {"sum": np.sum, "amax": np.amax, "amin": np.amin}[op]
        ref = partial(_reduce_ref, f, dim, keep)
    return src, op, [x], ref


def _gen_shape(rng, env):
    x = _pick(rng, env)
    shape = env[x][1]
    rank = len(shape)
    n = math.prod(shape)
    ops = ["reshape", "flatten", "unsqueeze", "flip", "contiguous", "expand", "repeat", "clone", "mT_or_T",
           "broadcast_to", "roll", "to", "view_dtype_free"]
    if rank >= 1:
        ops += ["permute", "transpose", "squeeze", "movedim", "narrow", "select", "chunk", "split", "unbind",
                "tril", "diagonal", "view"]
    op = rng.choice(ops)
    d = _dim(rng, rank)
    ref = None
    if op == "reshape":
        new = rng.choice(((-1,), (n,), (1, -1), (-1, 1)) if n else ((0,), (-1, 2), (2, 0, -1)))
        src = f"{x}.reshape{new!r}" if rng.random() < 0.5 else f"torch.reshape({x}, {new!r})"
        ref = partial(_reshape_ref, new)
    elif op == "view":
        src = f"{x}.view(-1)"
    elif op == "flatten":
        src = f"torch.flatten({x})" if rng.random() < 0.5 else f"{x}.flatten({min(0, d)})"
    elif op == "unsqueeze":
        src = f"{x}.unsqueeze({rng.randint(-rank - 1, rank)})"
    elif op == "flip":
        src = f"{x}.flip({d})" if rank else f"{x}.flip(0)"
        ref = (lambda a, d=d: np.flip(a, d)) if rank else None
    elif op == "contiguous":
        src = f"{x}.contiguous()"
    elif op == "expand":
        src = f"{x}.expand({(2,) + shape!r})" if rng.random() < 0.7 else f"{x}.expand_as(torch.empty({(3,) + shape}))"
    elif op == "repeat":
        reps = tuple(rng.randint(1, 2) for _ in range(max(rank, 1) + rng.randint(0, 1)))
        src = f"{x}.repeat{reps!r}" if rng.random() < 0.6 else f"torch.tile({x}, {reps!r})"
    elif op == "clone":
        src = f"{x}.clone()"
    elif op == "mT_or_T":
        src = f"{x}.mT" if rank >= 2 else f"{x}.T" if rank <= 2 else f"{x}.t()"
    elif op == "broadcast_to":
        src = f"torch.broadcast_to({x}, {(2,) + shape!r})"
    elif op == "roll":
        src = f"torch.roll({x}, {rng.randint(-2, 3)}{f', {d}' if rank and rng.random() < 0.7 else ''})"
    elif op == "to":
        src = f"{x}.to(torch.{rng.choice(DTYPES)})" if rng.random() < 0.7 else \
            f"{x}.{rng.choice(('float', 'double', 'half', 'long', 'int', 'bool'))}()"
    elif op == "view_dtype_free":
        src = f"{x}.type_as({_pick(rng, env)})"
    elif op == "permute":
        p = list(range(rank))
        rng.shuffle(p)
        src = f"{x}.permute{tuple(p)!r}" if rank > 1 else f"{x}.permute(0)"
        ref = partial(_transpose_ref, tuple(p))
    elif op == "transpose":
        d2 = _dim(rng, rank)
        src = f"{x}.transpose({d}, {d2})"
        ref = partial(_swap_ref, d, d2)
    elif op == "squeeze":
        src = f"{x}.squeeze({d})" if rng.random() < 0.7 else f"{x}.squeeze()"
    elif op == "movedim":
        src = f"torch.movedim({x}, {d}, {_dim(rng, rank)})"
    elif op == "narrow":
        src = f"{x}.narrow({d}, {rng.randint(0, 1)}, {rng.randint(0, 2)})"
    elif op == "select":
        src = f"{x}.select({d}, {rng.randint(-1, 1)})"
    elif op in ("chunk", "split"):
        src = f"{x}.{op}({rng.randint(1, 3)}, {d})[{rng.choice((0, -1))}]"
    elif op == "unbind":
        src = f"{x}.unbind({d})[0]"
    elif op == "tril":
        src = f"torch.{rng.choice(('tril', 'triu'))}({x}, {rng.randint(-1, 1)})"
    else:  # diagonal
        src = f"{x}.diagonal()" if rank >= 2 else f"torch.diag({x})"
    return src, op, [x], ref


def _gen_index(rng, env):
    x = _pick(rng, env)
    shape = env[x][1]
    r = rng.random()
    if r < 0.6:
        return f"{x}[{_index_expr(rng, shape)}]", "getitem", [x], None
    rank = len(shape)
    d = _dim(rng, rank)
    size = shape[d] if rank else 1
    idx = [rng.randint(0, max(size - 1, 0)) for _ in range(rng.randint(0, 3))]
    if r < 0.7:
        return f"torch.index_select({x}, {d}, torch.tensor({idx!r}, dtype=torch.int64, device=DEV))", \
            "index_select", [x], None
    if r < 0.8 and rank:
        ishape = list(shape)
        ishape[d] = rng.randint(1, 2)
        vals = [rng.randint(0, max(size - 1, 0)) for _ in range(math.prod(ishape))]
        return f"torch.gather({x}, {d}, torch.tensor({_nested(vals, tuple(ishape))}, device=DEV))", "gather", \
            [x], None
    if r < 0.9:
        m = _pick(rng, env, lambda e: e[0] == "bool" and _broadcasts(e[1], shape))
        if m is None:
            m = f"({x} > 0)"
        return f"{x}.masked_fill({m}, {_scalar(rng)})", "masked_fill", [x], None
    m = _pick(rng, env, lambda e: e[0] == "bool" and e[1] == shape) or f"({x} > 0)"
    return f"torch.masked_select({x}, {m})", "masked_select", [x], None


def _gen_misc(rng, env):
    x = _pick(rng, env)
    shape = env[x][1]
    rank = len(shape)
    r = rng.random()
    d = _dim(rng, rank)
    if r < 0.2:
        if rank >= 2:
            return f"torch.matmul({x}, {x}.mT)", "matmul", [x], \
                ((lambda a: np.matmul(a, np.swapaxes(a, -1, -2))) if env[x][0] in ("float32", "float64")
                 else None)
        if rank == 1:
            return f"{x} @ {x}", "matmul", [x], None
        return f"torch.mm({x}.reshape(1, 1), {x}.reshape(1, 1))", "mm", [x], None
    if r < 0.35:
        fn = rng.choice(("softmax", "log_softmax"))
        dt = ", dtype=torch.float64" if rng.random() < 0.2 else ""
        return f"torch.{fn}({x}, {d}{dt})" if rng.random() < 0.5 else f"F.{fn}({x}, dim={d}{dt})", fn, [x], None
    if r < 0.5:
        c = _pick(rng, env, lambda e: e[0] == "bool" and _broadcasts(e[1], shape)) or f"{x} > 0"
        y = _operand(rng, env, x)
        return f"torch.where({c}, {x}, {y})", "where", [x, y], None
    if r < 0.65:
        same = [n for n in env if env[n][1][:d] + env[n][1][d + 1:] == shape[:d] + shape[d + 1:]] if rank else [x]
        ys = [rng.choice(same) for _ in range(rng.randint(1, 2))]
        names = ", ".join([x] + ys)
        if rng.random() < 0.5:
            return f"torch.cat([{names}], {d if rank else 0})", "cat", [x] + ys, None
        ys = [n for n in ys if env[n][1] == shape]
        names = ", ".join([x] + ys)
        return f"torch.stack([{names}], {rng.randint(-rank - 1, rank)})", "stack", [x] + ys, None
    if r < 0.75:
        fn = rng.choice(("relu", "gelu", "silu", "elu", "leaky_relu", "softplus", "hardtanh", "logsigmoid",
                         "normalize", "layer_norm", "dropout_eval", "mish", "tanhshrink", "softsign"))
        if fn == "layer_norm":
            return f"F.layer_norm({x}, {shape[-1:]!r})", fn, [x], None
        if fn == "dropout_eval":
            return f"F.dropout({x}, 0.5, training=False)", fn, [x], None
        if fn == "normalize":
            return f"F.normalize({x}, dim={d})", fn, [x], None
        return f"F.{fn}({x})", fn, [x], None
    if r < 0.85:
        fn = rng.choice(("sort", "topk", "argsort", "clamp", "lerp", "addcmul", "outer", "dot", "sort_values",
                         "kthvalue", "unique", "nonzero", "diff", "trace"))
        if fn == "sort":
            return f"torch.sort({x}, dim={d}, stable=True)[1]", fn, [x], None
        if fn == "sort_values":
            return f"torch.sort({x}, {d}, descending=True).values", "sort", [x], None
        if fn == "topk":
            k = rng.randint(0, shape[d] if rank else 1)
            return f"torch.topk({x}, {k}, {d}).values", fn, [x], None
        if fn == "argsort":
            return f"torch.argsort({x}, dim={d}, stable=True)", fn, [x], None
        if fn == "clamp":
            lo, hi = rng.choice(((-1, 1), (0.5, None), (None, 2), (1.5, -0.5)))
            return f"torch.clamp({x}, min={lo}, max={hi})", fn, [x], None
        if fn == "lerp":
            y = _operand(rng, env, x, scalar=False)
            return f"torch.lerp({x}, {y}, 0.25)", fn, [x, y], None
        if fn == "addcmul":
            y = _operand(rng, env, x, scalar=False)
            return f"torch.addcmul({x}, {y}, {y}, value=0.5)", fn, [x, y], None
        if fn == "outer":
            return f"torch.outer({x}.flatten(), {x}.flatten())", fn, [x], None
        if fn == "dot":
            return f"torch.dot({x}.flatten(), {x}.flatten())", fn, [x], None
        if fn == "kthvalue":
            return f"torch.kthvalue({x}, 1, {d}).values", fn, [x], None
        if fn == "unique":
            return f"torch.unique({x})", fn, [x], None
        if fn == "nonzero":
            return f"torch.nonzero({x})", fn, [x], None
        if fn == "diff":
            return f"torch.diff({x}, dim={d})", fn, [x], None
        return f"torch.trace({x})", fn, [x], None
    fn = rng.choice(("sum_all", "item", "tolist", "allclose", "equal", "numel", "any_all"))
    if fn == "sum_all":
        return f"{x}.sum()", "sum", [x], None
    if fn == "item":
        return f"torch.tensor({x}.flatten()[0].item() if {x}.numel() else 0.0)", "item", [x], None
    if fn == "tolist":
        return f"torch.tensor({x}.tolist(), dtype={x}.dtype, device=DEV)", "tolist", [x], None
    if fn == "allclose":
        return f"torch.tensor(torch.allclose({x}, {x} * 1.0))", "allclose", [x], None
    if fn == "equal":
        return f"torch.tensor(torch.equal({x}, {x}.clone()))", "equal", [x], None
    if fn == "numel":
        return f"torch.tensor({x}.numel() + {x}.dim())", "numel", [x], None
    return f"{x}.any() & {x}.all()", "any_all", [x], None


def _gen_extra(rng, env):
    """Less common ops: scatter/index_add, out=, losses, padding, einsum, aminmax, clamp with tensor bounds."""
    x = _pick(rng, env)
    shape = env[x][1]
    rank = len(shape)
    d = _dim(rng, rank)
    size = shape[d] if rank else 1
    fn = rng.choice(("index_add", "scatter_add", "scatter", "out", "mse", "cross_entropy", "pad", "one_hot",
                     "einsum", "aminmax", "clamp_t", "linear", "var_mean", "take", "index_fill", "addmm",
                     "cumsum_dtype", "l1", "bce_logits", "max_binary", "baddbmm"))
    if fn in ("index_add", "index_fill"):
        idx = [rng.randint(0, max(size - 1, 0)) for _ in range(rng.randint(1, 2))]
        it = f"torch.tensor({idx!r}, device=DEV)"
        if fn == "index_fill":
            return f"{x}.index_fill({d}, {it}, {_scalar(rng)})", fn, [x], None
        src_shape = list(shape) if rank else []
        if rank:
            src_shape[d] = len(idx)
        return f"{x}.index_add({d}, {it}, torch.ones({tuple(src_shape)!r}, dtype={x}.dtype, device=DEV), " \
               f"alpha={rng.choice((1, 2))})", fn, [x], None
    if fn in ("scatter_add", "scatter"):
        vals = [rng.randint(0, max(size - 1, 0)) for _ in range(math.prod(shape))]
        it = f"torch.tensor({_nested(vals, shape)}, device=DEV)"
        if fn == "scatter":
            return f"torch.scatter({x}, {d}, {it}, {_scalar(rng)})", fn, [x], None
        return f"{x}.scatter_add({d}, {it}, {x})", fn, [x], None
    if fn == "out":
        y = _operand(rng, env, x, scalar=False)
        op = rng.choice(("add", "mul", "sub", "maximum"))
        return f"torch.{op}({x}, {y}, out=torch.empty(0, dtype={x}.dtype, device=DEV))", "out=" + op, [x, y], None
    if fn in ("mse", "l1", "bce_logits"):
        y = _operand(rng, env, x, scalar=False)
        red = rng.choice(("mean", "sum", "none"))
        name = {"mse": "mse_loss", "l1": "l1_loss", "bce_logits": "binary_cross_entropy_with_logits"}[fn]
        return f"F.{name}({x}, {y}, reduction={red!r})", name, [x, y], None
    if fn == "cross_entropy":
        if rank == 2 and shape[0]:
            t = [rng.randint(0, max(shape[1] - 1, 0)) for _ in range(shape[0])]
            return f"F.cross_entropy({x}, torch.tensor({t!r}, device=DEV))", fn, [x], None
        return f"F.cross_entropy({x}.reshape(1, -1), torch.tensor([0], device=DEV))", fn, [x], None
    if fn == "pad":
        p = tuple(rng.randint(0, 2) for _ in range(2 * rng.randint(1, max(min(rank, 2), 1))))
        mode = rng.choice(("constant", "constant", "reflect", "replicate"))
        return f"F.pad({x}, {p!r}, mode={mode!r})", "pad:" + mode, [x], None
    if fn == "one_hot":
        return f"F.one_hot({x}.long().abs() % 4, 4)", fn, [x], None
    if fn == "einsum":
        if rank == 2:
            return f"torch.einsum('ij,kj->ik', {x}, {x})", fn, [x], None
        return f"torch.einsum('...->', {x})", fn, [x], None
    if fn == "aminmax":
        return f"torch.aminmax({x}{f', dim={d}' if rank and rng.random() < 0.6 else ''})[{rng.randint(0, 1)}]", \
            fn, [x], None
    if fn == "clamp_t":
        y = _operand(rng, env, x, scalar=False)
        return f"torch.clamp({x}, min={y})" if rng.random() < 0.5 else f"torch.clamp({x}, max={y})", fn, [x, y], None
    if fn == "linear":
        k = shape[-1] if rank else 1
        return f"F.linear({x}, torch.ones((3, {k}), dtype={x}.dtype, device=DEV))", fn, [x], None
    if fn == "var_mean":
        return f"torch.var_mean({x}{f', dim={d}' if rank else ''})[{rng.randint(0, 1)}]", fn, [x], None
    if fn == "take":
        n = math.prod(shape)
        idx = [rng.randint(-n, max(n - 1, 0)) for _ in range(rng.randint(0, 3))] if n else []
        return f"torch.take({x}, torch.tensor({idx!r}, dtype=torch.int64, device=DEV))", fn, [x], None
    if fn == "addmm":
        if rank == 2:
            return f"torch.addmm({x}, {x}, {x}.mT.contiguous()[:, :{shape[1]}], beta={rng.choice((1, 0.5, 0))}, " \
                   f"alpha={rng.choice((1, 2))})", fn, [x], None
        return f"torch.mv({x}.reshape(1, -1), {x}.flatten())", "mv", [x], None
    if fn == "cumsum_dtype":
        return f"torch.cumsum({x}, {d if rank else 0}, dtype=torch.{rng.choice(('float64', 'int64', 'float32'))})", \
            fn, [x], None
    if fn == "max_binary":
        y = _operand(rng, env, x, scalar=False)
        return f"torch.{rng.choice(('max', 'min'))}({x}, {y})", fn, [x, y], None
    if rank == 3:
        return f"torch.baddbmm({x}, {x}, {x}.mT, alpha=0.5)", "baddbmm", [x], None
    return f"torch.bmm({x}.reshape(1, 1, -1), {x}.reshape(1, -1, 1))", "bmm", [x], None


def _gen_inplace(rng, env, name: str):
    """A statement that creates ``name`` as a clone (or a view of a clone) of a variable and modifies it."""
    x = _pick(rng, env)
    assert x is not None  # run_program stops when env is empty
    shape = env[x][1]
    op = rng.choice(_INPLACE)
    pre = f"{name} = {x}.clone(); "
    if env[x][2] is False or not env[x][3]:
        if rng.random() < 0.4:
            pre = f"{name} = {x}; "   # in place on the variable itself (a view or a non-leaf)
    if op == "setitem":
        val = _operand(rng, env, x) if rng.random() < 0.5 else _scalar(rng)
        return pre + f"{name}[{_index_expr(rng, shape)}] = {val}", "setitem", [x]
    if op in ("+=", "*=", "-="):
        return pre + f"{name} {op} {_operand(rng, env, x)}", op, [x]
    if op in ("zero_", "relu_", "abs_", "neg_", "exp_"):
        return pre + f"{name}.{op}()", op, [x]
    if op == "fill_":
        return pre + f"{name}.fill_({_scalar(rng)})", op, [x]
    if op == "clamp_":
        return pre + f"{name}.clamp_(min=-1, max=1.5)", op, [x]
    if op == "copy_":
        return pre + f"{name}.copy_({_operand(rng, env, x)})", op, [x]
    if op == "masked_fill_":
        return pre + f"{name}.masked_fill_({name} > 0, {_scalar(rng)})", op, [x]
    if op == "pow_":
        return pre + f"{name}.pow_(2)", op, [x]
    kw = ", alpha=2" if op in ("add_", "sub_") and rng.random() < 0.3 else ""
    return pre + f"{name}.{op}({_operand(rng, env, x)}{kw})", op, [x]


def _more_families() -> tuple:
    """coretorch/testing_fuzz_families.py: from the package, or by path where this module was loaded by path (the
    oracle's PyTorch process imports no coretorch)."""
    if __package__:
        mod = importlib.import_module(f"{__package__}.testing_fuzz_families")
    else:
        path = pathlib.Path(__file__).with_name("testing_fuzz_families.py")
        spec = importlib.util.spec_from_file_location("testing_fuzz_families", path)
        assert spec is not None and spec.loader is not None  # a .py file next to this one
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    return mod.families(sys.modules[__name__])


_FAMILIES = ((_gen_unary, 3), (_gen_binary, 5), (_gen_reduce, 3), (_gen_shape, 3), (_gen_index, 3),
             (_gen_misc, 4), (None, 3), (_gen_extra, 3)) + _more_families()  # None: in place


def _summary(ns: dict, name: str):
    """(dtype name, shape, requires_grad, is_leaf, a CPU tensor in a program on another device)."""
    t = ns[name]
    host = ns["DEV"] != "cpu" and t.device.type == "cpu"  # (torch.tensor(x.item()): made without device=)
    return _dname(t), tuple(t.shape), bool(t.requires_grad), bool(t.is_leaf), host


def run_program(seed: int, torch, device: str = "cpu", *, n_steps: int | None = None, special: bool = False,
                refs: bool = False, avoid=None) -> Result:
    """Generate (from ``seed``) and run one program on the torch-like module ``torch`` on ``device``.

    special: inputs may hold nan/inf/huge values. refs: compute numpy references where cheap.
    avoid: ``(src, op, kind) -> bool``; a chosen step for which it is true is replaced by another choice.
    """
    rng = random.Random(seed)
    ns: dict = {"torch": torch, "F": torch.nn.functional, "DEV": device, "nan": math.nan, "inf": math.inf}
    res = Result(seed)
    env: dict = {}
    n_in = rng.randint(1, 3)
    for i in range(n_in):
        name = f"x{i}"
        src = _input_src(rng, name, special)
        step = Step(src, "input", "")
        try:
            exec(src, ns)
            env[name] = _summary(ns, name)
            step.dtype, step.shape = env[name][0], env[name][1]
        except Exception as e:  # noqa: BLE001 - every failure is a result to compare
            step.error = error_class(e)
        res.steps.append(step)
    leaves = [n for n in env if env[n][2]]
    steps = n_steps if n_steps is not None else rng.randint(1, 4)
    for k in range(steps):
        if not env:
            break
        name = f"x{n_in + k}"
        for _attempt in range(20):
            fam = rng.choices([f for f, _ in _FAMILIES], [w for _, w in _FAMILIES])[0]
            if fam is None or getattr(fam, "statement", False):
                src, op, args = (fam or _gen_inplace)(rng, env, name)
                ref: Any = None  # the family's numpy reference function, if it has one
            else:
                rhs, op, args, ref = fam(rng, env)
                src = f"{name} = {rhs}"
            kind = _kind(env, args)
            if avoid is None or not avoid(src, op, kind):
                break
        step = Step(src, op, kind)
        arrays = [_host(ns[a]) for a in args if a in env] if refs and ref is not None else None
        try:
            exec(src, ns)
            out = ns[name]
            if not hasattr(out, "requires_grad"):
                raise TypeError(f"not a tensor: {type(out).__name__}")
            env[name] = _summary(ns, name)
            step.dtype, step.shape, step.requires_grad = env[name][0], env[name][1], env[name][2]
            step.value = _host(out)
            if arrays is not None and len(arrays) == len([a for a in args if a in env]):
                try:
                    with np.errstate(all="ignore"):
                        step.expected = np.asarray(ref(*arrays))
                except Exception:  # noqa: BLE001 - numpy cannot do it: no reference
                    step.expected = None
        except Exception as e:  # noqa: BLE001
            step.error = error_class(e)
            ns.pop(name, None)
            env.pop(name, None)
        res.steps.append(step)
    for n in env:
        res.final[n] = _host(ns[n])
    outs = [n for n in env if env[n][2] and env[n][0] in FLOATS + ("bfloat16",)]
    if leaves and outs:
        try:
            loss: Any = 0  # a Tensor after the first term
            for n in outs:
                t = ns[n]
                w = ((torch.arange(t.numel(), device=device) % 7) - 3).to(torch.float64).reshape(t.shape)
                loss = loss + (t.to(torch.float64) * w).sum()
            loss.backward()
            for n in leaves:
                g = ns[n].grad
                res.grads[n] = None if g is None else _host(g)
        except Exception as e:  # noqa: BLE001
            res.grad_error = error_class(e)
            res.grad_message = str(e)[:300]
    return res
