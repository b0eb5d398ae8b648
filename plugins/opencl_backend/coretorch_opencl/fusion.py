"""Fused elementwise kernels for ``coretorch.compile`` (the ``compile_fused`` hook of the opencl kernel table).

The core's fusion pass (``coretorch/_compile/fusion.py``) hands over groups of recorded elementwise launches
(:class:`coretorch._compile.fusion.FusedProgram`); each becomes one generated kernel whose intermediates live in
registers.  Every node computes exactly the expression of its unfused kernel (taken from the elementwise table's
``_ew_specs``, so NaN/inf behaviour and integer corner cases are the same) in the same compute type, and its value
is converted to the node's dtype as the unfused kernel's store would (``(uchar)(v != 0)`` for bool): a float32 chain
gives bitwise the values of its unfused launches (each node one statement: FP_CONTRACT, on by default in OpenCL C,
contracts within a node's expression exactly as in its own kernel, never across nodes).

All the groups of one capture are one OpenCL program (one build; ``Device.kernel`` caches it in memory and
pyopencl's binary cache on disk, as every other kernel of this backend).  Layouts: inputs of any strides
broadcastable to the group's shape; the kernel is specialised on which inputs are contiguous with the output and
on the collapsed rank (a 2-D range without index division up to 2 collapsed dims, as the "_2" elementwise kernels),
the strides themselves are arguments.  A replay checks each input's shape and strides against the capture's and
builds another variant if they differ (a persistent array of more than one dim is checked before the replay runs,
which captures again: eager's results would follow its layout, coretorch/_compile/layouts.py).  A group that
continues through reshapes reads its ``flat`` inputs (contiguous arrays of the output's size, another shape) at the
linear index and writes each output in its own shape (a flat input that is strided at a replay is read from a
contiguous copy; an array the group updates in place is then written back from it).  Supported dtypes: float32,
float64, the integer types and bool (float16 and bfloat16 round their intermediates through memory: not fused).
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from . import codegen as cg
from . import prologue as _prologue
from .common import _BINARY, _BOOL, _UNARY
from .device import STATS, c_strides, cla
from .layout import _collapse, _desc, _expand_strides

_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int64, np.int32, np.int16, np.int8, np.uint8,
                                          np.bool_))
_MAX_ARGS = 96  # kernel parameters of one fused kernel (CL_DEVICE_MAX_PARAMETER_SIZE is at least 1024 bytes)


def _conv(expr: str, src, dst) -> str:
    """``expr`` (a value of dtype ``src`` in its compute type) as ``dst``'s compute type, as a cast kernel stores."""
    return cg.convert(expr, src, dst)


def _store_conv(expr: str, dt) -> str:
    return f"(uchar)(({expr}) != 0)" if dt == _BOOL else f"({cg.stype(dt)})({expr})"


class _Meta:
    """What a fused call keeps of a capture-time input (not the array: its memory would stay alive)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


def _scalar_conv(dt):
    """How the elementwise table passes a Python scalar for dtype ``dt`` (``_scalar_arg``)."""
    if dt == _BOOL:
        return lambda v: int(bool(v))
    if dt.kind in "iu":
        return int
    return float


def kernels(k) -> dict:
    dev = k.dev
    specs: dict = {}

    def spec_of(dt) -> dict:
        s = specs.get(dt)
        if s is None:
            s = specs[dt] = {sp[0]: sp for sp in k._ew_specs(dt)}
        return s

    def fusable(name, args, out) -> bool:
        """Whether a recorded launch ``name(*args) -> out`` can be a node of a fused kernel."""
        if out.dtype not in _DTYPES or any(isinstance(a, cla.Array) and a.dtype not in _DTYPES for a in args):
            return False
        if isinstance(out, cla.Array) and out.__dict__.get("_ct_p"):
            # (eager's result kept its operands' layout: a fused kernel writes row-major)
            return False
        if name == "full":
            return True
        if not args or not isinstance(args[0], cla.Array):
            return False
        dt = args[0].dtype
        if name in _UNARY:
            return f"u_{name}" in spec_of(dt)
        if name in _BINARY:
            return len(args) == 2 and f"b_{name}" in spec_of(dt)
        if name == "where":
            return dt == _BOOL and len(args) == 3
        if name == "clamp":
            return all(a is None or isinstance(a, (bool, int, float)) for a in args[1:])
        if name == "axpy_":
            return dt != _BOOL and isinstance(args[2], cla.Array)
        return name in ("cast", "assign_")

    def node_spec(name, ops, in_dt, out_dt):
        """(spec, program dtype, operands in the spec's order) of a node: the unfused kernel's entry in
        ``_ew_specs``."""
        def is_sc(j):
            return ops[j][0] == "scalar"
        vals = [op for op in ops if op[0] != "const"]
        if name == "axpy_":  # (y, alpha, x) -> y + alpha x: k_axpy's operands are (y, x, alpha)
            return spec_of(out_dt)["k_axpy"], out_dt, [ops[0], ops[2], ops[1]]
        if name == "assign_":  # (dst, src): a cast of src to dst's dtype, or a fill with a scalar
            if is_sc(1):
                return spec_of(out_dt)["k_fill"], out_dt, [ops[1]]
            return spec_of(in_dt(ops[1]))[f"k_cast_{cg.tag(out_dt)}"], in_dt(ops[1]), [ops[1]]
        if name in _UNARY:
            pdt, kname = in_dt(ops[0]), f"u_{name}"
        elif name in _BINARY:
            pdt, kname = in_dt(ops[0]), f"b_{name}{'_sc' if is_sc(1) else ''}"
        elif name == "cast":
            pdt, kname = in_dt(ops[0]), f"k_cast_{cg.tag(out_dt)}"
        elif name == "where":
            pdt, kname = out_dt, f"k_where_{int(is_sc(1))}{int(is_sc(2))}"
        elif name == "clamp":
            pdt, kname = in_dt(ops[0]), f"k_clamp_{int(ops[1][0] != 'const')}{int(ops[2][0] != 'const')}"
        else:  # full
            pdt, kname = out_dt, "k_fill"
        return spec_of(pdt)[kname], pdt, vals

    def kernel_src(prog, kname, modes, nd):
        """The source of one fused kernel; ``modes`` per input "c" (contiguous with the output) or "s"."""
        out_dts = [np.dtype(prog.nodes[j][2]) for j in prog.outputs]
        targets = set(prog.targets.values())
        params = [f"__global {cg.stype(dt)}* o{i}" for i, dt in enumerate(out_dts) if i not in prog.targets]
        loads, idxs = [], []
        read = {op[1] for _, ops, _ in prog.nodes for op in ops if op[0] == "in"}
        two_d = "s" in modes and nd <= 2
        for i, (a, m) in enumerate(zip(prog.inputs, modes)):
            dt = a.dtype
            params += [f"__global {'' if i in targets else 'const '}{cg.stype(dt)}* p{i}", f"long po{i}"]
            if m == "c":
                idx = f"po{i} + g"
            else:
                params += [f"long ps{i}_{d}" for d in range(nd)]
                idx = f"po{i} + i * ps{i}_0 + j * ps{i}_1" if two_d else f"po{i} + " + cg.offset(nd, f"ps{i}_")
            idxs.append(idx)
            if i in read:
                loads.append(f"  const {cg.ctype(dt)} x{i} = {cg.load(dt, f'p{i}', idx)};")
        scal = []
        body, helpers = [], set()
        vdt = []  # each node's dtype

        def in_dt(op):
            return np.dtype(prog.inputs[op[1]].dtype) if op[0] == "in" else vdt[op[1]]

        def value(op, want):
            if op[0] == "in":
                return _conv(f"x{op[1]}", np.dtype(prog.inputs[op[1]].dtype), want)
            if op[0] == "node":
                return _conv(f"v{op[1]}", vdt[op[1]], want)
            scal.append((op[1], want))
            return f"s{op[1]}"
        for j, (name, ops, odt) in enumerate(prog.nodes):
            odt = np.dtype(odt)
            (_, expr, sdt, operands, _), pdt, vals = node_spec(name, ops, in_dt, odt)
            if np.dtype(sdt) != odt:
                return None
            helpers.add(pdt)
            decl = "; ".join(f"const {cg.ctype(d)} a{q} = {value(op, np.dtype(d))}"
                             for q, (op, (d, _)) in enumerate(zip(vals, operands)))
            body.append(f"  {cg.ctype(odt)} v{j};\n  {{ {decl}; v{j} = {_store_conv(expr, odt)}; }}")
            vdt.append(odt)
        scal.sort()
        params += [f"{cg.ctype(d)} s{i}" for i, d in scal]
        params.append("long n")
        if two_d:
            params.append("long d1")
            head = "  const long j = get_global_id(0), i = get_global_id(1); if (j >= d1) return;\n" \
                   "  const long g = i * d1 + j;\n"
        elif "s" in modes:
            params += [f"long d{q}" for q in range(nd)]
            head = f"  const long g = get_global_id(0); if (g >= n) return;\n  {cg.decode(nd)}\n"
        else:
            head = "  const long g = get_global_id(0); if (g >= n) return;\n"
        if len(params) > _MAX_ARGS:
            return None
        stores = []
        for i, (j, dt) in enumerate(zip(prog.outputs, out_dts)):
            t = prog.targets.get(i)  # an updated array: written in place at its own index
            stores.append(f"  {cg.store(dt, f'o{i}', 'g', f'v{j}')}" if t is None
                          else f"  {cg.store(dt, f'p{t}', idxs[t], f'v{j}')}")
        src = (f"__kernel void {kname}({', '.join(params)}) {{\n{head}" + "\n".join(loads) + "\n" + "\n".join(body)
               + "\n" + "\n".join(stores) + "\n}\n")
        return src, helpers, [d for _, d in scal]

    def plan(shape, arrays, flat=frozenset()):
        """(modes, rank, per-input stride arguments, trailing arguments, 2-D range or None) of a layout; ``flat``:
        inputs read at the linear index (contiguous, the output's size)."""
        cst = c_strides(shape)
        sts = [cst if i in flat else _expand_strides(a.shape, _desc(a)[3], shape) for i, a in enumerate(arrays)]
        dims, csts = _collapse(shape, [cst] + sts)
        ocs = csts[0]
        modes = ["c" if s == ocs else "s" for s in csts[1:]]
        nd = len(dims)
        n = int(np.prod(shape, dtype=np.int64))
        if "s" not in modes:
            return modes, nd, [() for _ in arrays], [n], None
        if nd <= 2:
            d0, d1 = ((1,) * (2 - nd) + dims)
            pads = [(0,) * (2 - nd) + s for s in csts[1:]]
            ls0 = min(dev.ls, 1 << (d1 - 1).bit_length())
            rng = ((-(-d1 // ls0) * ls0, d0), (ls0, 1))
            return modes, 2, [p if m == "s" else () for p, m in zip(pads, modes)], [n, d1], rng
        return modes, nd, [s if m == "s" else () for s, m in zip(csts[1:], modes)], [n, *dims], None

    def helpers_src(dts) -> str:
        seen, parts = set(), []
        for dt in sorted(dts, key=str):
            key = "bool" if dt == _BOOL else cg.ctype(dt)
            if key not in seen:
                seen.add(key)
                parts.append(cg.helpers(dt))
        return "".join(parts)

    def make_call(prog, kern, layout, convs):
        shape, flat = prog.shape, prog.flat
        out_dts = [np.dtype(prog.nodes[j][2]) for j in prog.outputs]
        fresh = [(sh, dt) for i, (sh, dt) in enumerate(zip(prog.out_shapes, out_dts)) if i not in prog.targets]
        tgt = sorted(prog.targets.items())
        tgt_in = set(prog.targets.values())
        is_c, contig, copy_into = k.is_contiguous, k.contiguous, k._copy_into
        ni = len(prog.inputs)
        cap = [(a.shape, a.strides) for a in prog.inputs]
        isz = [a.dtype.itemsize for a in prog.inputs]
        prog.inputs = [_Meta(a.dtype) for a in prog.inputs]
        cur = {"layout": layout, "kern": kern, "key": cap}
        lock, array, queue = dev.lock, dev.array, dev.queue

        def relayout(arrays):
            """Another layout than the capture's: the variant of the kernel for it (built once)."""
            key = [(a.shape, a.strides) for a in arrays]
            if any(i in flat and not k.is_contiguous(a) for i, a in enumerate(arrays)):
                raise RuntimeError("coretorch-opencl: a fused kernel read through a reshape takes contiguous arrays")
            lay = plan(shape, arrays, flat)
            res = kernel_src(prog, "fused0", lay[0], lay[1])
            if res is None:
                raise RuntimeError("coretorch-opencl: a fused kernel cannot take this layout")
            src, hs, _ = res
            full = helpers_src(hs) + src
            kern2 = dev.kernel(("fused", hashlib.sha1(full.encode()).hexdigest()), "fused0", lambda: full)
            cur.update(layout=lay, kern=kern2, key=key)

        def call(*vals):
            with lock:
                outs = [array(sh, dt) for sh, dt in fresh]
                args = [o.base_data for o in outs]
                key = cur["key"]
                for i in range(ni):
                    a = vals[i]
                    if a.strides != key[i][1] or a.shape != key[i][0]:
                        if i in flat and not is_c(a):  # read linearly: a contiguous copy
                            c = contig(a)
                            res = call(*vals[:i], c, *vals[i + 1:])
                            if i in tgt_in:  # an array updated in place (w.data = other.t() since): written back
                                copy_into(a, c)
                                res = [a if o is c else o for o in res]
                            return res
                        relayout(vals[:ni])
                        return call(*vals)
                modes, nd, strides, tail, rng = cur["layout"]
                for i in range(ni):
                    a = vals[i]
                    args.append(a.base_data)
                    args.append(a.offset // isz[i])
                    args.extend(strides[i])
                for c, v in zip(convs, vals[ni:]):
                    args.append(c(v))
                args.extend(tail)
                if rng is None:
                    dev.launch(cur["kern"], tail[0], args)
                else:
                    STATS["launches"] += 1
                    cur["kern"](queue, rng[0], rng[1], *args)
                for i, k in tgt:  # an updated array is its own output
                    outs.insert(i, vals[k])
                return outs
        return call

    def compile_fused(programs) -> list:
        """One callable per FusedProgram (None where it cannot be fused); all kernels in one program (one build)."""
        parts: list[str] = []
        helpers: set[str] = set()
        made: list[Any] = []
        for q, prog in enumerate(programs):
            try:
                lay = plan(prog.shape, prog.inputs, prog.flat)
                res = kernel_src(prog, f"fused{q}", lay[0], lay[1])
            except (KeyError, ValueError, IndexError):
                res = None
            if res is None:
                made.append(None)
                continue
            src, hs, sdts = res
            parts.append(src)
            helpers |= hs
            made.append((lay, sdts))
        if not parts:
            return [None] * len(programs)
        full = helpers_src(helpers) + "".join(parts)
        key = ("fused", hashlib.sha1(full.encode()).hexdigest())
        out: list[Any] = []
        for q, (prog, m) in enumerate(zip(programs, made)):
            if m is None:
                out.append(None)
                continue
            lay, sdts = m
            kern = dev.kernel(key, f"fused{q}", lambda: full)
            out.append(make_call(prog, kern, lay, [_scalar_conv(np.dtype(d)) for d in sdts]))
        return out

    compile_fused.fusable = fusable  # type: ignore[attr-defined]
    # (a fused kernel writes row-major where eager's results follow their operands' layouts: the replay checks the
    # persistent arrays' layouts, coretorch/_compile/layouts.py)
    compile_fused.follows_operands = True  # type: ignore[attr-defined]
    pro = _prologue.kernels(k)["prologue"]
    compile_fused.prologue = pro  # type: ignore[attr-defined]
    compile_fused.prologues = pro.names  # type: ignore[attr-defined]
    return {"compile_fused": compile_fused}
