"""OpCases of the joining family (coretorch.ops.joining); part of coretorch.testing.CASES."""
from __future__ import annotations

import numpy as np

import coretorch as ct
from coretorch.testing import Arg as A
from coretorch.testing import OpCase
from coretorch.testing_ops.core import _shares_input

F, I, B = ("float32", "float64"), ("int64", "int32"), ("bool",)  # noqa: E741


def _np_unfold(a, dim, size, step):
    a1 = a.reshape(1) if a.ndim == 0 else a
    w = np.lib.stride_tricks.sliding_window_view(a1, size, axis=dim)
    return np.take(w, np.arange(0, a1.shape[dim] - size + 1, step), axis=dim)


def _np_strided(a, size, stride, off):
    flat = np.ascontiguousarray(a).reshape(-1)
    return np.lib.stride_tricks.as_strided(flat[off:], size, [s * flat.itemsize for s in stride]).copy()


def _np_tensor_split(a, ios, dim=0):
    if isinstance(ios, int):
        return tuple(np.array_split(a, ios, axis=dim))
    bounds = [0] + list(ios) + [None]
    return tuple(a[(slice(None),) * dim + (slice(s, e),)] for s, e in zip(bounds[:-1], bounds[1:]))


def _np_repeat_t(reps, dim=None):
    def ref(a):
        return np.repeat(a.reshape(-1) if dim is None else a, reps, axis=0 if dim is None else dim)
    return ref


def _rot_cases() -> list:
    return [
        OpCase("roll", lambda x: ct.roll(x, 2, 1), lambda a: np.roll(a, 2, 1), (A((4, 5)),), F + I + B, gradgrad=True),
        OpCase("roll.flat", lambda x: x.roll(-3), lambda a: np.roll(a, -3), (A((4, 5), layout="t"),)),
        OpCase("roll.multi", lambda x: ct.roll(x, (1, -7), (0, -1)), lambda a: np.roll(a, (1, -7), (0, 1)),
               (A((3, 4), layout="s"),)),
        OpCase("roll.zero_shift", lambda x: x.roll(0, 0), lambda a: a.copy(), (A((3, 4)),)),
        OpCase("roll.0d", lambda x: x.roll(1), lambda a: a.copy(), (A(()),)),
        OpCase("roll.empty", lambda x: x.roll(1, 0), lambda a: a.copy(), (A((0, 3)),)),
        OpCase("roll.misaligned", lambda x: x.roll((1, 2), 0), None, (A((3, 4)),), raises=RuntimeError),
        OpCase("rot90", ct.rot90, np.rot90, (A((3, 4)),), F + I + B, gradgrad=True),
        OpCase("rot90.k2", lambda x: x.rot90(2), lambda a: np.rot90(a, 2), (A((3, 4), layout="t"),)),
        OpCase("rot90.k3_dims", lambda x: ct.rot90(x, 3, (2, 0)), lambda a: np.rot90(a, 3, (2, 0)), (A((2, 3, 4)),)),
        OpCase("rot90.k_neg", lambda x: ct.rot90(x, -1, [1, 0]), lambda a: np.rot90(a, -1, (1, 0)), (A((3, 4)),)),
        OpCase("rot90.k0", lambda x: ct.rot90(x, 4), lambda a: a.copy(), (A((3, 4)),)),
        OpCase("rot90.1d", ct.rot90, None, (A((3,)),), raises=RuntimeError),
        OpCase("rot90.same_dims", lambda x: ct.rot90(x, 1, (0, 0)), None, (A((3, 3)),), raises=RuntimeError),
        OpCase("tile", lambda x: ct.tile(x, (2, 1, 3)), lambda a: np.tile(a, (2, 1, 3)), (A((2, 3)),), F + I + B,
               gradgrad=True),
        OpCase("tile.short_dims", lambda x: x.tile(2), lambda a: np.tile(a, 2), (A((2, 3), layout="t"),)),
        OpCase("tile.varargs", lambda x: x.tile(2, 2), lambda a: np.tile(a, (2, 2)), (A((3,)),)),
        OpCase("tile.0d", lambda x: x.tile((3,)), lambda a: np.tile(a, 3), (A(()),)),
        OpCase("repeat_interleave", lambda x: ct.repeat_interleave(x, 2), lambda a: np.repeat(a.reshape(-1), 2),
               (A((2, 3)),), F + I + B, gradgrad=True),
        OpCase("repeat_interleave.dim", lambda x: x.repeat_interleave(3, dim=-1), lambda a: np.repeat(a, 3, -1),
               (A((2, 3), layout="t"),)),
        OpCase("repeat_interleave.tensor", lambda x: x.repeat_interleave(ct.tensor([2, 0, 1, 3], device=x.device), 0),
               _np_repeat_t([2, 0, 1, 3], 0), (A((4, 3)),), F + I, gradgrad=True),
        OpCase("repeat_interleave.tensor_flat", lambda x: ct.repeat_interleave(
            x, ct.tensor([0, 1, 0, 2, 1, 1], device=x.device), output_size=5),
            _np_repeat_t([0, 1, 0, 2, 1, 1]), (A((2, 3), layout="s"),)),
        OpCase("repeat_interleave.one_repeat_tensor", lambda x: x.repeat_interleave(ct.tensor([2], device=x.device),
                                                                                    dim=1),
               lambda a: np.repeat(a, 2, 1), (A((2, 3)),)),
        OpCase("repeat_interleave.0d", lambda x: x.repeat_interleave(2), lambda a: np.repeat(a, 2), (A(()),)),
        OpCase("repeat_interleave.repeats_only", lambda x: ct.repeat_interleave((x > 0).long() + 1),
               lambda a: np.repeat(np.arange(a.size), (a > 0).astype(np.int64) + 1), (A((5,)),), grad=False),
        OpCase("repeat_interleave.negative", lambda x: x.repeat_interleave(ct.tensor([1, -1], device=x.device), 0),
               None, (A((2, 3)),), raises=RuntimeError),
        OpCase("repeat_interleave.size_mismatch", lambda x: x.repeat_interleave(ct.tensor([1, 1, 1], device=x.device),
                                                                                0),
               None, (A((2, 3)),), raises=RuntimeError),
    ]


def _stack_cases() -> list:
    return [
        OpCase("meshgrid", lambda x, y: ct.meshgrid(x, y, indexing="ij"), lambda a, b: np.meshgrid(a, b, indexing="ij"),
               (A((3,)), A((4,))), F + I),
        OpCase("meshgrid.xy", lambda x, y, z: ct.meshgrid([x, y, z], indexing="xy"),
               lambda a, b, c: np.meshgrid(a, b, c, indexing="xy"), (A((3,)), A((2,), layout="s"), A(()))),
        OpCase("meshgrid.one", lambda x: ct.meshgrid(x, indexing="xy"), lambda a: (a.copy(),), (A((3,)),)),
        OpCase("meshgrid.2d_input", lambda x, y: ct.meshgrid(x, y, indexing="ij"), None, (A((2, 2)), A((3,))),
               raises=RuntimeError),
        OpCase("meshgrid.bad_indexing", lambda x, y: ct.meshgrid(x, y, indexing="xx"), None, (A((2,)), A((3,))),
               raises=ValueError),
        OpCase("dstack", lambda x, y, z: ct.dstack([x, y, z]), lambda a, b, c: np.dstack([a, b, c]),
               (A((2, 3)), A((2, 3), layout="t"), A((2, 3, 2))), F + I),
        OpCase("dstack.1d", lambda x, y: ct.dstack((x, y)), lambda a, b: np.dstack((a, b)), (A((3,)), A((3,)))),
        OpCase("column_stack", lambda x, y, z: ct.column_stack([x, y, z]), lambda a, b, c: np.column_stack([a, b, c]),
               (A((3,)), A((3, 2), layout="t"), A((3,), layout="s")), F + I),
        OpCase("column_stack.0d", lambda x, y: ct.column_stack([x, y]), lambda a, b: np.column_stack([a, b]),
               (A(()), A(()))),
        OpCase("row_stack", lambda x, y: ct.row_stack((x, y)), lambda a, b: np.vstack((a, b)), (A((3,)), A((2, 3)))),
        OpCase("vstack.0d", lambda x, y: ct.vstack((x, y)), lambda a, b: np.vstack((a, b)), (A(()), A(()))),
        OpCase("hstack.0d", lambda x, y: ct.hstack((x, y)), lambda a, b: np.hstack((a, b)), (A(()), A(()))),
        OpCase("hstack.mixed", lambda x, y: ct.hstack((x, y)), lambda a, b: np.hstack((a, b)),
               (A((2, 3)), A((2, 2), layout="t"))),
        OpCase("dstack.mismatch", lambda x, y: ct.dstack([x, y]), None, (A((2, 3)), A((3, 3))), raises=RuntimeError),
        OpCase("tensor_split", lambda x: ct.tensor_split(x, 3), lambda a: _np_tensor_split(a, 3), (A((7, 2)),), F + I,
               gradgrad=True),
        OpCase("tensor_split.indices", lambda x: x.tensor_split([1, -1, 9], dim=1),
               lambda a: _np_tensor_split(a, [1, -1, 9], 1), (A((2, 6), layout="t"),)),
        OpCase("tensor_split.tensor", lambda x: ct.tensor_split(x, ct.tensor([2, 3]), 0),
               lambda a: _np_tensor_split(a, [2, 3]), (A((5,)),)),
        OpCase("tensor_split.tensor_0d", lambda x: ct.tensor_split(x, ct.tensor(4)),
               lambda a: _np_tensor_split(a, 4), (A((6,)),)),
        OpCase("tensor_split.more_sections", lambda x: x.tensor_split(5), lambda a: _np_tensor_split(a, 5), (A((3,)),)),
        OpCase("tensor_split.zero_sections", lambda x: x.tensor_split(0), None, (A((3,)),), raises=RuntimeError),
        OpCase("tensor_split.0d", lambda x: ct.tensor_split(x, 2), None, (A(()),), raises=RuntimeError),
        OpCase("hsplit", lambda x: ct.hsplit(x, 2), lambda a: tuple(np.hsplit(a, 2)), (A((3, 4)),), F + I),
        OpCase("hsplit.1d", lambda x: x.hsplit([1, 3]), lambda a: tuple(np.hsplit(a, [1, 3])), (A((5,)),)),
        OpCase("vsplit", lambda x: ct.vsplit(x, [2]), lambda a: tuple(np.vsplit(a, [2])), (A((4, 3), layout="t"),)),
        OpCase("dsplit", lambda x: x.dsplit(2), lambda a: tuple(np.dsplit(a, 2)), (A((2, 2, 4)),)),
        OpCase("hsplit.indivisible", lambda x: ct.hsplit(x, 3), None, (A((3, 4)),), raises=RuntimeError),
        OpCase("vsplit.1d", lambda x: ct.vsplit(x, 1), None, (A((4,)),), raises=RuntimeError),
        OpCase("dsplit.2d", lambda x: ct.dsplit(x, 1), None, (A((4, 2)),), raises=RuntimeError),
    ]


def _layout_cases() -> list:
    return [
        OpCase("fliplr", ct.fliplr, np.fliplr, (A((3, 4)),), F + I),
        OpCase("flipud", lambda x: x.flipud(), np.flipud, (A((3, 4), layout="t"),)),
        OpCase("fliplr.1d", ct.fliplr, None, (A((3,)),), raises=RuntimeError),
        OpCase("moveaxis", lambda x: ct.moveaxis(x, 0, -1), lambda a: np.moveaxis(a, 0, -1), (A((2, 3, 4)),), F + I,
               props=_shares_input),
        OpCase("moveaxis.multi", lambda x: x.moveaxis((0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0)),
               (A((2, 3, 4)),)),
        OpCase("swapaxes", lambda x: ct.swapaxes(x, 0, -1), lambda a: np.swapaxes(a, 0, -1), (A((2, 3, 4)),)),
        OpCase("swapdims.method", lambda x: x.swapdims(1, 0), lambda a: np.swapaxes(a, 1, 0), (A((3, 4), layout="t"),)),
        OpCase("atleast_1d", ct.atleast_1d, np.atleast_1d, (A(()),), F + I),
        OpCase("atleast_1d.many", lambda x, y: ct.atleast_1d(x, y), lambda a, b: tuple(np.atleast_1d(a, b)),
               (A(()), A((2, 3)))),
        OpCase("atleast_2d", ct.atleast_2d, np.atleast_2d, (A((3,)),)),
        OpCase("atleast_2d.list", lambda x, y: ct.atleast_2d([x, y]), lambda a, b: tuple(np.atleast_2d(a, b)),
               (A(()), A((3,), layout="s"))),
        OpCase("atleast_3d", lambda x, y, z: ct.atleast_3d(x, y, z), lambda a, b, c: tuple(np.atleast_3d(a, b, c)),
               (A(()), A((3,)), A((2, 3), layout="t"))),
        OpCase("atleast_3d.4d", ct.atleast_3d, np.atleast_3d, (A((1, 2, 3, 2)),)),
        OpCase("ravel", ct.ravel, np.ravel, (A((2, 3, 4)),), F + I + B, props=_shares_input),
        OpCase("ravel.t", lambda x: x.ravel(), np.ravel, (A((3, 4), layout="t"),)),
        OpCase("ravel.0d", ct.ravel, np.ravel, (A(()),)),
        OpCase("flatten.0d_range", lambda x: x.flatten(0, -1), lambda a: a.reshape(1), (A(()),)),
        OpCase("flatten.neg_dims", lambda x: ct.flatten(x, start_dim=-3, end_dim=-2), lambda a: a.reshape(6, 4),
               (A((2, 3, 4), layout="t"),)),
        OpCase("unflatten.neg_infer", lambda x: x.unflatten(-1, (2, -1)), lambda a: a.reshape(3, 2, 2),
               (A((3, 4)),)),
        OpCase("flatten.bad_range", lambda x: x.flatten(2, 1), None, (A((2, 3, 4)),), raises=RuntimeError),
        OpCase("as_strided", lambda x: ct.as_strided(x, (3, 2), (1, 3)), lambda a: _np_strided(a, (3, 2), (1, 3), 0),
               (A((2, 3)),), F + I, props=_shares_input, gradgrad=True),
        OpCase("as_strided.offset", lambda x: x.as_strided((2, 2), (4, 1), 3),
               lambda a: _np_strided(a, (2, 2), (4, 1), 3), (A((3, 4)),)),
        OpCase("as_strided.overlap", lambda x: x.as_strided((3, 3), (1, 1)),
               lambda a: _np_strided(a, (3, 3), (1, 1), 0), (A((6,)),)),
        OpCase("as_strided.out_of_bounds", lambda x: x.as_strided((3, 3), (3, 1), 2), None, (A((3, 3)),),
               raises=RuntimeError),
        OpCase("as_strided.negative_stride", lambda x: x.as_strided((3,), (-1,)), None, (A((3,)),),
               raises=RuntimeError),
        OpCase("unfold", lambda x: x.unfold(1, 2, 1), lambda a: _np_unfold(a, 1, 2, 1), (A((3, 5)),), F + I,
               props=_shares_input, gradgrad=True),
        OpCase("unfold.step", lambda x: x.unfold(0, 3, 2), lambda a: _np_unfold(a, 0, 3, 2), (A((8,)),)),
        OpCase("unfold.t", lambda x: x.unfold(-1, 2, 3), lambda a: _np_unfold(a, 1, 2, 3), (A((4, 5), layout="t"),)),
        OpCase("unfold.strided", lambda x: x.unfold(0, 2, 1), lambda a: _np_unfold(a, 0, 2, 1),
               (A((3, 4), layout="s"),)),
        OpCase("unfold.0d", lambda x: x.unfold(0, 1, 1), lambda a: a.reshape(1), (A(()),)),
        OpCase("unfold.too_big", lambda x: x.unfold(1, 6, 1), None, (A((3, 5)),), raises=RuntimeError),
        OpCase("unfold.bad_step", lambda x: x.unfold(1, 2, 0), None, (A((3, 5)),), raises=RuntimeError),
        OpCase("view_as.method", lambda x, y: x.view_as(y), lambda a, b: a.reshape(b.shape), (A((2, 6)), A((3, 4)))),
        OpCase("type_as", lambda x, y: x.type_as(y), lambda a, b: a.astype(b.dtype),
               (A((2, 3)), A((2,), dtype="int32")), F, grad=False),
    ]


CASES: list[OpCase] = _rot_cases() + _stack_cases() + _layout_cases()
