"""More families of random program steps for coretorch/testing_fuzz.py: creation ops, dtype promotion with 0-d
tensors and Python scalars, in-place ops through views, setitem / index_put_ / masked_scatter_ and friends, and
reductions with dtype= / unbiased= / bool inputs.

Like testing_fuzz it needs only numpy and never imports coretorch (the oracle loads both by path in a PyTorch
process); ``families(fz)`` takes the testing_fuzz module for its helpers and returns ``(generator, weight)`` pairs.
A generator with ``statement = True`` takes the new variable's name and returns a whole statement.
"""
from __future__ import annotations

import importlib.util
import math
import pathlib
from typing import Any

_fz: Any = None  # the testing_fuzz module (set by families(); loaded by path in the oracle process)


def _scalar_of(rng, dt: str) -> str:
    """A Python number of the category of dtype ``dt`` (bool, int or float)."""
    if dt == "bool":
        return repr(rng.random() < 0.5)
    if dt in _fz.INTS:
        return repr(rng.randint(0, 5) if dt == "uint8" else rng.randint(-4, 5))
    return repr(rng.choice((0.5, -1.25, 2.0, 3.75, -0.125)))


def gen_create(rng, env):
    """Factories with PyTorch's dtype inference (int fill -> int64, float -> the default, bool -> bool)."""
    fz = _fz
    x = fz._pick(rng, env)
    shape = env[x][1]
    r = rng.random()
    dt = rng.choice(fz.DTYPES)
    kw = f", dtype=torch.{dt}" if rng.random() < 0.35 else ""
    if r < 0.15:
        start, end, step = rng.choice(((0, 5, 1), (1, 7, 2), (-3, 3, 1), (0.5, 3.0, 0.5), (5, 0, -2), (0, 4, 1.5)))
        if rng.random() < 0.3:
            return f"torch.arange({end}, device=DEV{kw})", "arange", [], None
        return f"torch.arange({start}, {end}, {step}, device=DEV{kw})", "arange", [], None
    if r < 0.25:
        n = rng.randint(0, 5)
        lo, hi = rng.choice(((0, 1), (-2, 2), (0, 10), (1.5, -1.5)))
        kw = f", dtype=torch.{rng.choice(fz.FLOATS)}" if rng.random() < 0.3 else ""
        return f"torch.linspace({lo}, {hi}, {n}, device=DEV{kw})", "linspace", [], None
    if r < 0.4:
        sh = shape if rng.random() < 0.6 else (rng.randint(0, 3),)
        v = _scalar_of(rng, rng.choice(("bool", "int64", "float32")))
        return f"torch.full({sh!r}, {v}, device=DEV{kw if rng.random() < 0.5 else ''})", "full", [], None
    if r < 0.6:
        fn = rng.choice(("zeros_like", "ones_like", "full_like", "rand_like_zero", "empty_like_fill"))
        if fn == "full_like":
            return f"torch.full_like({x}, {_scalar_of(rng, env[x][0])}{kw})", fn, [x], None
        if fn == "rand_like_zero":
            return f"torch.zeros_like({x}, dtype=torch.float64) * torch.ones_like({x})", "zeros_like", [x], None
        if fn == "empty_like_fill":
            return f"torch.empty_like({x}).fill_({_scalar_of(rng, env[x][0])})", "empty_like", [x], None
        return f"torch.{fn}({x}{kw})", fn, [x], None
    if r < 0.75:
        fn = rng.choice(("new_full", "new_zeros", "new_ones", "new_tensor", "new_empty"))
        if fn == "new_full":
            return f"{x}.new_full((2, {rng.randint(0, 2)}), {_scalar_of(rng, rng.choice(fz.DTYPES))})", fn, [x], \
                None
        if fn == "new_tensor":
            vals = [_scalar_of(rng, rng.choice(("int64", "float32", "bool"))) for _ in range(rng.randint(1, 3))]
            return f"{x}.new_tensor([{', '.join(vals)}])", fn, [x], None
        if fn == "new_empty":
            return f"{x}.new_empty((3,)).zero_()", fn, [x], None
        return f"{x}.{fn}({shape!r}{kw})", fn, [x], None
    if r < 0.9:
        # torch.tensor's inference from Python values: bool < int < float, nested lists, 0-d
        kinds = rng.choice((("int64",), ("float32",), ("bool",), ("int64", "float32"), ("bool", "int64"),
                            ("bool", "float32")))
        n = rng.randint(0, 4)
        vals = [_scalar_of(rng, rng.choice(kinds)) for _ in range(n)]
        if n == 1 and rng.random() < 0.5:
            return f"torch.tensor({vals[0]}, device=DEV{kw})", "tensor", [], None
        return f"torch.tensor([{', '.join(vals)}], device=DEV{kw})", "tensor", [], None
    if r < 0.95:
        n, m = rng.randint(0, 3), rng.choice((None, 0, 2, 4))
        return f"torch.eye({n}{'' if m is None else f', {m}'}, device=DEV{kw})", "eye", [], None
    k = rng.randint(0, 4)
    return f"torch.tril_indices({k}, {rng.randint(0, 4)}, {rng.randint(-1, 1)}, device=DEV)", "tril_indices", [], \
        None


_PROMOTE_OPS = ("+", "-", "*", "/", "<", "==", "//", "%", "**", "max", "where", "clamp", "add_alpha", "mul_method")


def gen_promote(rng, env):
    """Binary ops between a tensor and a 0-d tensor or a Python number of another dtype category (PyTorch's
    promotion: a dimensioned tensor outranks a 0-d one of its category, a higher category wins)."""
    fz = _fz
    x = fz._pick(rng, env)
    dt = rng.choice(fz.DTYPES)
    v = _scalar_of(rng, dt)
    other = v if rng.random() < 0.4 else f"torch.tensor({v}, dtype=torch.{dt}, device=DEV)"
    op = rng.choice(_PROMOTE_OPS)
    a, b = (x, other) if rng.random() < 0.7 else (other, x)
    if op == "max":
        o = other if other.startswith("torch.") else f"torch.tensor({v}, device=DEV)"
        return f"torch.{rng.choice(('maximum', 'minimum'))}({x}, {o})", "promote:maximum", [x], None
    if op == "where":
        return f"torch.where({x} > 0, {x}, {other})", "promote:where", [x], None
    if op == "clamp":
        return f"torch.clamp({x}, min={v})", "promote:clamp", [x], None
    if op == "add_alpha":
        return f"torch.add({x}, {other}, alpha={rng.choice((2, -1))})", "promote:add", [x], None
    if op == "mul_method":
        return f"{x}.mul({other})", "promote:mul", [x], None
    return f"({a}) {op} ({b})", "promote:" + op, [x], None


def _view_expr(rng, shape: tuple) -> str:
    """A view of a tensor of ``shape`` (basic indexing and view ops only: writing through it writes the base)."""
    rank = len(shape)
    if rank == 0:
        return rng.choice(("[...]", "[None]", ".view(1)", ".unsqueeze(0)", ".reshape(1, 1)"))
    opts = [".view(-1)", ".unsqueeze(0)", "[...]", f".narrow({rng.randint(-rank, rank - 1)}, 0, 1)"]
    if shape[0]:
        opts += [f"[{rng.randint(-shape[0], shape[0] - 1)}]", "[:1]", "[::2]", f".select(0, {shape[0] - 1})"]
    if rank >= 2:
        opts += [".t()" if rank == 2 else ".mT", ".transpose(0, -1)", ".diagonal()",
                 "[:, 0]" if shape[1] else "[:, :0]", ".movedim(0, -1)",
                 ".permute" + repr(tuple(reversed(range(rank))))]
    return rng.choice(opts)


def gen_view_inplace(rng, env, name: str):
    """``name`` is a clone of a variable, modified in place through a view of it (the base sees the write; with
    autograd the base's gradient flows through the write)."""
    fz = _fz
    x = fz._pick(rng, env)
    dt, shape = env[x][0], env[x][1]
    view = _view_expr(rng, shape)
    s = _scalar_of(rng, dt) if rng.random() < 0.8 else fz._scalar(rng)
    op = rng.choice(("add_", "mul_", "zero_", "fill_", "clamp_", "neg_", "copy_", "setitem", "iadd", "sub_",
                     "masked_fill_", "exp_"))
    if op == "zero_" or op == "neg_" or op == "exp_":
        tail = f".{op}()"
    elif op == "clamp_":
        tail = ".clamp_(min=0)"
    elif op == "copy_":
        tail = f".copy_(torch.tensor({s}, device=DEV))"
    elif op == "setitem":
        tail = f"[...] = {s}"
    elif op == "iadd":
        tail = f" += {s}"
    elif op == "masked_fill_":
        tail = f".masked_fill_(torch.tensor(True, device=DEV), {s})"
    else:
        tail = f".{op}({s})"
    if op == "iadd":   # x.view(...) += s is not Python: the view gets a name of its own
        return f"{name} = {x}.clone(); _v = {name}{view}; _v{tail}", "view:" + op, [x]
    return f"{name} = {x}.clone(); {name}{view}{tail}", "view:" + op, [x]


gen_view_inplace.statement = True  # type: ignore[attr-defined]  # the marker run_program reads


def gen_setitem(rng, env, name: str):
    """Advanced writes: boolean-mask and index-list setitem with tensor values, index_put_ (accumulate),
    masked_scatter_, scatter_/index_fill_/index_add_/index_copy_ in place, and `x[idx] += v`."""
    fz = _fz
    x = fz._pick(rng, env)
    dt, shape = env[x][0], env[x][1]
    rank = len(shape)
    pre = f"{name} = {x}.clone(); "
    s = _scalar_of(rng, dt)
    d = fz._dim(rng, rank)
    size = shape[d] if rank else 1
    idx = [rng.randint(-size, size - 1) for _ in range(rng.randint(1, 3))] if size else []
    it = f"torch.tensor({idx!r}, dtype=torch.int64, device=DEV)"
    op = rng.choice(("mask", "mask_tensor", "list", "list_tensor", "index_put", "masked_scatter", "scatter_",
                     "index_fill_", "index_add_", "index_copy_", "iadd_item"))
    if op == "mask":
        return pre + f"{name}[{name} > 0] = {s}", "setitem:mask", [x]
    if op == "mask_tensor":
        return pre + f"{name}[{name} > 0] = torch.tensor({s}, device=DEV)", "setitem:mask", [x]
    if op == "list" and rank:
        return pre + f"{name}[{idx!r}] = {s}", "setitem:list", [x]
    if op == "list_tensor" and rank:
        return pre + f"{name}[{idx!r}] = {name}[{idx!r}] * 2", "setitem:list", [x]
    if op == "index_put":
        acc = rng.random() < 0.5
        y = fz._pick(rng, env, lambda e: e[0] == dt and e[1] == ())
        val = y if y is not None else f"torch.tensor({s}, dtype={name}.dtype, device=DEV)"
        ix = f"({it},)" if rank else "()"
        return pre + f"{name}.index_put_({ix}, {val}, accumulate={acc})", "index_put_", [x] + ([y] if y else [])
    if op == "masked_scatter":
        return pre + f"{name}.masked_scatter_({name} > 0, torch.ones_like({name}) + {name})", "masked_scatter_", [x]
    pos = [i % size for i in idx] if size else []
    pt = f"torch.tensor({pos!r}, dtype=torch.int64, device=DEV)"
    if op == "scatter_" and rank:
        ish = list(shape)
        ish[d] = min(len(pos), shape[d]) if pos else 0
        vals = [rng.randint(0, max(size - 1, 0)) for _ in range(math.prod(ish))]
        return pre + f"{name}.scatter_({d}, torch.tensor({fz._nested(vals, tuple(ish))}, device=DEV), {s})", \
            "scatter_", [x]
    if op == "index_fill_":
        return pre + f"{name}.index_fill_({d}, {pt}, {s})", "index_fill_", [x]
    if op in ("index_add_", "index_copy_") and rank:
        src = list(shape)
        src[d] = len(pos)
        pos_u = sorted(set(pos)) if op == "index_copy_" else pos
        src[d] = len(pos_u)
        pu = f"torch.tensor({pos_u!r}, dtype=torch.int64, device=DEV)"
        return pre + f"{name}.{op}({d}, {pu}, torch.ones({tuple(src)!r}, dtype={name}.dtype, device=DEV))", op, [x]
    if rank and shape[0]:
        return pre + f"{name}[{rng.randint(0, shape[0] - 1)}] += {s}", "setitem:iadd", [x]
    return pre + f"{name}[...] = {s}", "setitem", [x]


gen_setitem.statement = True  # type: ignore[attr-defined]  # the marker run_program reads


def gen_reduce2(rng, env):
    """Reductions with dtype=, unbiased=, keepdim on several dims, bool and integer inputs, and nonzero/where."""
    fz = _fz
    x = fz._pick(rng, env)
    rank = len(env[x][1])
    d = fz._dim(rng, rank)
    k = ", keepdim=True" if rng.random() < 0.4 else ""
    op = rng.choice(("mean_dtype", "prod_dtype", "std_unbiased", "sum_bool", "nanmean", "where1", "nonzero_tuple",
                     "max_keep", "argmax_keep", "cumsum_bool", "any_dim", "mean_int", "var_dims", "logsumexp_keep"))
    if op == "mean_dtype":
        return f"torch.mean({x}, dim={d if rank else 0}{k}, dtype=torch.float64)", "mean", [x], None
    if op == "prod_dtype":
        return f"torch.prod({x}, {d if rank else 0}{k}, dtype=torch.{rng.choice(('int64', 'float64'))})", "prod", \
            [x], None
    if op == "std_unbiased":
        return f"torch.std({x}, {d if rank else 0}, unbiased={rng.random() < 0.5}{k})", "std", [x], None
    if op == "sum_bool":
        return f"({x} > 0).sum({f'dim={d}' if rank else ''}{k if rank else ''})", "sum", [x], None
    if op == "nanmean":
        return f"torch.nanmean({x}{f', dim={d}' if rank else ''})", "nanmean", [x], None
    if op == "where1":
        return f"torch.where({x} > 0)[{rng.randint(0, max(rank - 1, 0))}]", "where1", [x], None
    if op == "nonzero_tuple":
        return f"torch.nonzero({x}, as_tuple=True)[0]", "nonzero", [x], None
    if op == "max_keep":
        return f"{x}.max({d if rank else 0}, keepdim=True)[0]", "max", [x], None
    if op == "argmax_keep":
        return f"torch.argmax({x}, {d if rank else 0}, keepdim=True)", "argmax", [x], None
    if op == "cumsum_bool":
        return f"torch.cumsum({x} != 0, {d if rank else 0})", "cumsum", [x], None
    if op == "any_dim":
        return f"torch.{rng.choice(('any', 'all'))}({x}, {d if rank else 0}{k})", "any", [x], None
    if op == "mean_int":
        return f"{x}.mean()", "mean", [x], None
    if op == "var_dims" and rank >= 2:
        return f"torch.var({x}, dim=(0, 1), correction={rng.randint(0, 2)}{k})", "var", [x], None
    return f"torch.logsumexp({x}, {d if rank else 0}, keepdim=True)", "logsumexp", [x], None


def families(fz) -> tuple:
    """The generators of this module with their weights (testing_fuzz's own weights sum to 27), then those of
    testing_fuzz_families2 (loaded by path: this module may itself have been loaded by path)."""
    global _fz
    _fz = fz
    spec = importlib.util.spec_from_file_location("testing_fuzz_families2",
                                                  pathlib.Path(__file__).with_name("testing_fuzz_families2.py"))
    assert spec is not None and spec.loader is not None, "testing_fuzz_families2.py sits beside this module"
    more = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(more)
    return ((gen_create, 2), (gen_promote, 3), (gen_view_inplace, 3), (gen_setitem, 2), (gen_reduce2, 2)) + \
        more.families(fz)
