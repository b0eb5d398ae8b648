"""Differential oracle: random op programs (coretorch/testing_fuzz.py) run on PyTorch and on coretorch.

Optional (not part of `make test`; PyTorch is never a dependency). PyTorch runs in a separate interpreter (the
one given by --torch-python, with torch installed), coretorch in this one, so neither pollutes the other; the
results travel as pickled numpy arrays. Prints the agreement rate per device and the divergence classes (op +
input kind + what differs) with the shortest reproducer of each.

    .venv/bin/python benchmarks/torch_oracle.py --torch-python /path/to/venv-with-torch/bin/python \\
        --n 3000 --device cpu --device opencl:1000
"""
from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import importlib.util
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUZZ = ROOT / "coretorch" / "testing_fuzz.py"


def _empty_dims(src: str, ops) -> bool:
    """Whether a line of ``src`` calls one of ``ops`` over an empty dim list (dim=() / dim=[] / .op(()...)."""
    return any(f"{op}(" in line and any(k in line for k in ("dim=()", "dim=[]", f".{op}(()", f".{op}([]"))
               for line in src.splitlines() for op in ops)


# Differences coretorch keeps on purpose, each listed with its reason in the README's compatibility table: a
# divergence of this kind is reported apart ("deliberate"), never counted as agreement. (label, test of the
# PyTorch run and the coretorch run).
DELIBERATE = (
    ("remainder(Number, Tensor) is differentiable (PyTorch 2.13: 'derivative for aten::remainder is not "
     "implemented')",
     lambda want, got: "derivative for aten::remainder is not implemented" in (want.grad_message or "")
     and got.grad_error is None),
    ("bool ** Tensor is differentiable (PyTorch 2.13: INTERNAL ASSERT 'unknown ivalue tag' in the backward)",
     lambda want, got: "unknown ivalue tag" in (want.grad_message or "") and got.grad_error is None),
    ("atan2 with a bool operand is differentiable (PyTorch 2.13's backward negates the bool and raises)",
     lambda want, got: "on a bool tensor is not supported" in (want.grad_message or "") and got.grad_error is None
     and "atan2" in want.source),
    ("scatter_add with an empty index is differentiable (PyTorch 2.13's ScatterAddBackward0 returns a wrongly "
     "shaped gradient and raises)",
     lambda want, got: "ScatterAddBackward0 returned an invalid gradient" in (want.grad_message or "")
     and got.grad_error is None),
    ("var/std/var_mean over dim=() or dim=[] (every dim, as their forward reduces) have that reduction's gradient "
     "(PyTorch 2.13's backward divides by the element count of no dims: inf, or N times too large)",
     lambda want, got: want.grad_error is None and got.grad_error is None
     and _empty_dims(want.source, ("var", "std"))),
    ("on cpu sort keeps equal values and NaNs in input order also in rows of more than 16 elements (PyTorch's "
     "std::sort leaves them in its introsort order): quantile's gradient goes to another of its NaNs",
     lambda want, got: "quantile(" in want.source and _grads_moved_among_nans(want, got)),
    ("x ** False has a zero gradient as x ** 0 (PyTorch 2.13: nan at x == 0; its exponent == 0 shortcut misses a "
     "bool exponent)",
     lambda want, got: ("** False" in want.source or "** (False)" in want.source) and want.grad_error is None
     and got.grad_error is None
     and any(g is not None and g.dtype.kind == "f" and bool(np.isnan(g).any()) and not np.isnan(h).any()
             for g, h in ((want.grads[n], got.grads.get(n)) for n in want.grads) if h is not None)),
)
# the same for a step: (label, test of the PyTorch step, the coretorch step and the difference)
DELIBERATE_STEPS = (
    ("logsumexp over dim=() or dim=[] reduces every dim, as sum does (PyTorch 2.13 fails: 'output with shape [] "
     "doesn't match the broadcast shape [1]')",
     lambda a, b, what, device="cpu": a.op == "logsumexp" and a.error == "RuntimeError" and not b.error
     and _empty_dims(a.src, ("logsumexp",))),
    ("index_put_ with an empty tuple of indices writes the whole tensor as x[()] = v does (PyTorch 2.13 fails "
     "with internal errors: 'masked_fill_ only supports boolean masks ... nullptr', INTERNAL ASSERT)",
     lambda a, b, what, device="cpu": a.op == "index_put_" and "index_put_((), " in a.src and a.error and not b.error),
    ("an integer or bool tensor never requires grad after a setitem of a value that requires grad (issue 15; "
     "PyTorch 2.13 marks a bool destination of an advanced-index setitem as requiring grad)",
     lambda a, b, what, device="cpu": what == "requires_grad True vs False" and a.op.startswith("setitem")
     and a.dtype in ("bool", "uint8", "int8", "int16", "int32", "int64")),
    ("on opencl `take`/`index_select`/`index_fill_` of a CPU 0-d tensor with a device index raise (PyTorch's need "
     "one device, as on CUDA; the oracle's PyTorch side runs both on the CPU)",
     lambda a, b, what, device="cpu": device != "cpu" and a.op in ("take", "index_select", "index_fill_")
     and not a.error and b.error == "RuntimeError" and "[0d]" in a.kind),
    ("on opencl an in-place op or an index into a CPU tensor (`torch.tensor(x.item())`, made without device=) with "
     "a device operand or index raises, as PyTorch's CUDA (a CPU tensor may only be a 0-d operand of a device op; "
     "the oracle's PyTorch side runs everything on the CPU)",
     lambda a, b, what, device="cpu": device != "cpu" and not a.error and b.error == "RuntimeError"
     and b.kind.split(",")[0].endswith("[host]")
     and (a.op in _INPLACE_OPS or a.op.startswith(("getitem", "setitem")))),
)


def _literal(src: str):
    """The values of an input statement ``xN = torch.tensor([...], dtype=...)`` as a float array (None if not)."""
    head, _, rest = src.partition(" = torch.tensor(")
    body = rest.split(", dtype=")[0]
    if not rest or not body.startswith("["):
        return None
    try:
        return np.array(ast.literal_eval(body.replace("nan", "None").replace("inf", "1e999")), dtype=float)
    except (ValueError, SyntaxError):
        return None


def _grads_moved_among_nans(want, got) -> bool:
    """Each gradient that differs differs only at NaN positions of its leaf, with the same total there (a gradient
    going to another of equal NaNs: which one a sort puts first)."""
    if want.grad_error or got.grad_error:
        return False
    diffs = _grad_diffs(want, got)
    return diffs is not None and bool(diffs) and all(
        x is not None and x.shape == g.shape and x.dtype.kind == "f" and np.isnan(x[d]).all()
        and np.isclose(g[d].sum(dtype=float), h[d].sum(dtype=float)) for g, h, x, d in diffs)


def _grad_diffs(want, got) -> list | None:
    """(PyTorch's gradient, coretorch's, the leaf's input value or None, mask of the differing elements) of each
    float gradient that differs; None if one run has a gradient the other lacks."""
    inputs = {s.src.split(" = ", 1)[0]: _literal(s.src) for s in want.steps if s.op == "input"}
    out = []
    for name, g in want.grads.items():
        h, x = got.grads.get(name), inputs.get(name)
        if g is None or h is None or g.shape != h.shape or g.dtype.kind != "f":
            if (g is None) != (h is None):
                return None
            continue
        d = ~((g == h) | (np.isnan(g) & np.isnan(h)))
        if d.any():
            out.append((g, h, x, d))
    return out


def _nan_sign_only(a, b) -> bool:
    """copysign's values differ only in sign / signbit's flags differ (where a NaN's sign bit is read)."""
    if a.value is None or b.value is None or a.value.shape != b.value.shape:
        return False
    if a.op == "copysign":
        return np.array_equal(np.abs(a.value), np.abs(b.value), equal_nan=True)
    return a.op == "signbit"


def _defining_step(r, name: str):
    """The step that made variable ``name`` (None if not found)."""
    return next((s for s in r.steps if s.src.startswith(name + " = ")), None)


def _mode_rows(r) -> list:
    """(row length, input value) of every ``torch.mode(xN, d)`` statement of a program."""
    rows = []
    for s in r.steps:
        if s.op != "mode" or "torch.mode(" not in s.src:
            continue
        args = s.src.split("torch.mode(", 1)[1].split(")")[0].split(",")
        src = _defining_step(r, args[0].strip())
        if src is None or not src.shape:
            continue
        try:
            d = int(args[1]) if len(args) > 1 else -1
        except ValueError:
            continue
        rows.append((src.shape[d % len(src.shape)], src.value if src.value is not None else _literal(src.src)))
    return rows


def _mode_tie_moved(want, got, device: str) -> bool:
    """mode's gradient went to another of equal values (or NaNs) of its row: on cpu in a row of more than 16
    elements (PyTorch's unstable sort picks an index coretorch does not copy), on a device in any row with a NaN
    (the kernel's answer, as CUDA's mode)."""
    rows = _mode_rows(want)
    if want.grad_error or got.grad_error or not rows:
        return False
    if device == "cpu":
        if not any(n > 16 for n, _ in rows):
            return False
    elif not any(v is not None and np.asarray(v).dtype.kind == "f" and np.isnan(v).any() for _, v in rows):
        return False
    diffs = _grad_diffs(want, got)
    # the gradient moved onto another of tied values (or NaNs), with the same total there
    return diffs is not None and bool(diffs) and all(
        x is not None and x.shape == g.shape and np.isclose(g[d].sum(dtype=float), h[d].sum(dtype=float))
        and all(np.isnan(v) or np.count_nonzero(x == v) > 1 for v in x[d].ravel()) for g, h, x, d in diffs)


def _long_nonfinite_var_mean(want, a, what: str) -> bool:
    """var_mean/std_mean of slices of 32,768+ elements holding inf or NaN (PyTorch sums such rows in parallel
    chunks: which inf or NaN decides its mean; coretorch's rule is exact up to 32,767 elements per output)."""
    if what != "value" or a.op not in ("var_mean", "std_mean"):
        return False
    name = a.src.split("_mean(", 1)[1].split(",")[0].split(")")[0].strip()
    src = _defining_step(want, name)
    if src is None or src.value is None or src.shape is None or a.shape is None:
        return False
    n_in, n_out = int(np.prod(src.shape)), max(int(np.prod(a.shape)), 1)
    v = np.asarray(src.value)
    return n_in // n_out >= 32768 and v.dtype.kind == "f" and not np.isfinite(v).all()


def _layer_norm_overflow(want) -> bool:
    """The program normalises a float32 tensor holding a value of magnitude 2^64 or more (a row mean that large
    squares to inf: PyTorch's CPU moments give NaN for the row, coretorch's two-pass moments the limit 0)."""
    for s in want.steps:
        if "F.layer_norm(" not in s.src:
            continue
        x = _defining_step(want, s.src.split("F.layer_norm(", 1)[1].split(",")[0].strip())
        if x is not None and x.value is not None and np.asarray(x.value).dtype == np.float32:
            v = np.abs(np.asarray(x.value, float))
            if (v[np.isfinite(v)] >= 2.0 ** 64).any():
                return True
    return False


def _copysign_of_nan_signs(want, got, a, b) -> bool:
    """copysign(x, y) whose values differ only where y is NaN in both runs (the sign bit of a NaN an op made)."""
    if a.op != "copysign" or a.value is None or b.value is None or a.value.shape != b.value.shape:
        return False
    args = a.src.split("copysign(", 1)[1].rsplit(")", 1)[0].split(",")
    if len(args) != 2:
        return False
    ys = [_defining_step(r, args[1].strip()) for r in (want, got)]
    if any(y is None or y.value is None for y in ys):
        return False
    try:
        yw, yg = (np.broadcast_to(np.asarray(y.value, float), a.value.shape) for y in ys)
    except ValueError:
        return False
    d = ~((a.value == b.value) | (np.isnan(a.value) & np.isnan(b.value)))
    return bool(d.any()) and bool(np.isnan(yw[d]).all() and np.isnan(yg[d]).all()) \
        and np.array_equal(np.abs(a.value), np.abs(b.value), equal_nan=True)


_LAYER_NORM_LABEL = ("layer_norm of a float32 row whose mean is 2^64 or more in magnitude: PyTorch's CPU moments "
                     "square the mean (inf - inf: NaN), coretorch's two-pass moments give the limit 0")


# the same for a step whose test needs the whole program: (label, test of the PyTorch run, the coretorch run, the
# PyTorch step, the coretorch step and the difference)
DELIBERATE_PROGRAM_STEPS = (
    ("the sign bit of a NaN made by maximum/minimum is the input NaN's (PyTorch's x86 kernels make a negative "
     "default NaN), read by copysign/signbit",
     lambda want, got, a, b, what: what == "value" and a.op in ("copysign", "signbit") and "nan" in want.source
     and any(f in want.source for f in ("maximum(", "minimum(")) and _nan_sign_only(a, b)),
    ("copysign reads the sign bit of a NaN an invalid op made (sqrt/log/pow/acos out of their domain): it follows "
     "the kernel (numpy, the OpenCL device), PyTorch's differs by op and documents none",
     lambda want, got, a, b, what: what == "value" and _copysign_of_nan_signs(want, got, a, b)),
    ("var_mean/std_mean of slices of 32,768+ elements with inf or NaN: coretorch's rule for which inf or NaN "
     "decides the mean is PyTorch's Welford pass, exact up to 32,767 elements per output (PyTorch sums longer rows "
     "in parallel chunks)",
     lambda want, got, a, b, what: _long_nonfinite_var_mean(want, a, what)),
    (_LAYER_NORM_LABEL,
     lambda want, got, a, b, what: a.op == "layer_norm" and what == "value" and _layer_norm_overflow(want)),
    ("masked_fill_/index_fill_/index_put_ on an expanded tensor raise (PyTorch 2.13 writes every element sharing "
     "the memory, with a deprecation warning)",
     lambda want, got, a, b, what: a.op in ("masked_fill_", "index_fill_", "index_put_") and not a.error
     and b.error == "RuntimeError" and ".expand(" in want.source),
)
# the backward of a program whose test needs the device
_MODE_LABEL = ("mode's index among equal values: on cpu in rows of more than 16 elements the last occurrence "
               "(PyTorch's unstable std::sort picks another; it documents none), on opencl with NaN the kernel's "
               "answer (as CUDA's mode): another of the tied values (or of a row with NaN) and its gradient")
# the in-place statements of the generator (coretorch/testing_fuzz.py's _INPLACE, with the augmented assignments)
_INPLACE_OPS = frozenset(("setitem", "+=", "*=", "-=", "zero_", "relu_", "abs_", "neg_", "exp_", "fill_", "clamp_",
                          "copy_", "masked_fill_", "pow_", "add_", "sub_", "mul_", "div_"))


def _deliberate(want, got, diff, device: str) -> str | None:
    i, op, _, what = diff
    if op == "backward":
        return next((label for label, test in DELIBERATE if test(want, got)), None) or (
            _MODE_LABEL if _mode_tie_moved(want, got, device) else None) or (
            _LAYER_NORM_LABEL if _layer_norm_overflow(want) else None)
    if 0 <= i < min(len(want.steps), len(got.steps)):
        a, b = want.steps[i], got.steps[i]
        if a.op == "mode" and device != "cpu" and what == "value" and any(
                v is not None and np.asarray(v).dtype.kind == "f" and np.isnan(v).any() for _, v in _mode_rows(want)):
            return _MODE_LABEL  # (a row with NaN: the device kernel's answer, as CUDA's mode)
        return next((label for label, test in DELIBERATE_STEPS if test(a, b, what, device=device)), None) or next(
            (label for label, test in DELIBERATE_PROGRAM_STEPS if test(want, got, a, b, what)), None)
    return None


def _load_fuzz():
    """testing_fuzz by path: the PyTorch process must not import the coretorch package."""
    spec = importlib.util.spec_from_file_location("testing_fuzz", FUZZ)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["testing_fuzz"] = mod
    spec.loader.exec_module(mod)
    return mod


def _run(fz, torch, device: str, seeds, special: bool) -> list:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in seeds:
            r = fz.run_program(s, torch, device, special=special)
            out.append(dataclasses.asdict(r))
    return out


def _worker(args) -> None:
    import torch
    fz = _load_fuzz()
    a, b = map(int, args.seeds.split(":"))
    with open(args.worker, "wb") as f:
        pickle.dump(_run(fz, torch, "cpu", range(a, b), args.special), f)


def _result(fz, d: dict):
    d = dict(d)
    d["steps"] = [fz.Step(**s) for s in d["steps"]]
    return fz.Result(**d)


def _simplify(kind: str) -> str:
    """Input kind of a class: dtype families (int / float / bool / half) plus 0-d / empty / scalar markers."""
    out = []
    for p in kind.split(","):
        if not p:
            continue
        base = p.split("[")[0]
        fam = {"uint8": "uint8", "int8": "int", "int32": "int", "int64": "int", "float32": "float",
               "float64": "float", "float16": "half", "bool": "bool"}.get(base, base)
        out.append(fam + ("[" + p.split("[")[1] if "[" in p else ""))
    return ",".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "python3"))
    ap.add_argument("--n", type=int, default=2000, help="programs per device (unless DEVICE:N says)")
    ap.add_argument("--device", action="append", help="coretorch device[:N] (repeatable; default cpu)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--special", action="store_true", help="inputs may hold nan / inf / huge values")
    ap.add_argument("--show", type=int, default=60, help="classes to print")
    ap.add_argument("--dump", help="write every divergence (pickle) here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seeds", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return _worker(args)

    devices = [(d.split(":")[0], int(d.split(":")[1]) if ":" in d else args.n) for d in (args.device or ["cpu"])]
    n_max = max(n for _, n in devices)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "torch.pkl")
        t0 = time.time()
        cmd = [args.torch_python, str(__file__), "--worker", path, "--seeds", f"{args.start}:{args.start + n_max}"]
        if args.special:
            cmd.append("--special")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run(cmd, check=True, env=env)
        with open(path, "rb") as f:
            want_all = pickle.load(f)
        print(f"PyTorch: {n_max} programs in {time.time() - t0:.0f} s")

    import coretorch
    import coretorch.testing_fuzz as fz
    from coretorch.testing_fuzz_compare import compare
    dumps = []
    for device, n in devices:
        t0 = time.time()
        got_all = _run(fz, coretorch, device, range(args.start, args.start + n), args.special)
        classes: dict = collections.defaultdict(list)
        deliberate: collections.Counter = collections.Counter()
        agree = 0
        for w, g in zip(want_all[:n], got_all):
            want, got = _result(fz, w), _result(fz, g)
            diff = compare(want, got)
            if diff is None:
                agree += 1
                continue
            label = _deliberate(want, got, diff, device)
            if label is not None:
                deliberate[label] += 1
                continue
            i, op, kind, what = diff
            classes[(op, _simplify(kind), what)].append((want, got, i))
            dumps.append((device, want, got, diff))
        nd = sum(deliberate.values())
        print(f"\n== {device}: {agree}/{n} programs agree with PyTorch ({100 * agree / n:.2f}%), "
              f"{nd} differ deliberately (README; {100 * (agree + nd) / n:.2f}% with them), "
              f"{len(classes)} divergence classes, {time.time() - t0:.0f} s")
        for label, k in deliberate.most_common():
            print(f"    deliberate [{k}x] {label}")
        ranked = sorted(classes.items(), key=lambda kv: -len(kv[1]))
        for (op, kind, what), items in ranked[:args.show]:
            want, got, i = min(items, key=lambda it: len(it[0].source))
            print(f"\n[{len(items)}x] {op} ({kind}): {what}   seed {want.seed}")
            print("    " + want.source.replace("\n", "\n    "))
            if 0 <= i < len(want.steps):
                a, b = want.steps[i], got.steps[i]
                print(f"    torch:     {a.error or (a.dtype, a.shape, _short(a.value))}")
                print(f"    coretorch: {b.error or (b.dtype, b.shape, _short(b.value))}")
            elif what == "gradient":
                print(f"    torch grads:     { {k: _short(v) for k, v in want.grads.items()} }")
                print(f"    coretorch grads: { {k: _short(v) for k, v in got.grads.items()} }")
    if args.dump:
        with open(args.dump, "wb") as f:
            pickle.dump(dumps, f)


def _short(v) -> str:
    if v is None:
        return "None"
    s = repr(v.tolist()) if hasattr(v, "tolist") else repr(v)
    return s if len(s) < 160 else s[:157] + "..."


if __name__ == "__main__":
    main()
