"""PyTorch's memory-overlap checks between the written-to tensor and a source (aten/src/ATen/MemoryOverlap.cpp):
a copy whose source partly overlaps its destination (``x[1:] = x[:-1]``) is refused rather than giving a result
that depends on the kernel's traversal order; an identical source (``x.copy_(x)``) is allowed."""
from __future__ import annotations

NO, PARTIAL, FULL, TOO_HARD = 0, 1, 2, 3

_MSG = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
        "memory location. Please clone() the tensor before performing the operation.")


def _dense(shape, strides) -> bool:
    """PyTorch's is_non_overlapping_and_dense: some permutation of the dims is contiguous (size-1 dims ignored)."""
    want = 1
    for s, t in sorted(((s, t) for s, t in zip(shape, strides) if s != 1), key=lambda p: p[1]):
        if t != want:
            return False
        want *= s
    return True


def status(table, a, b, a_isz: int, b_isz: int, b_shape=None, b_strides=None) -> int:
    """get_overlap_status of the native arrays ``a`` and ``b`` (``b`` seen with ``b_shape``/``b_strides`` when
    given: its broadcast to the destination's shape).  A backend without ``same_storage`` never overlaps."""
    if a is b and b_shape is None:
        return FULL
    if not table.has("same_storage") or not table.same_storage(a, b):
        return NO
    ash, ast = tuple(a.shape), tuple(table.strides(a))
    bsh = tuple(b.shape) if b_shape is None else tuple(b_shape)
    bst = tuple(table.strides(b)) if b_strides is None else tuple(b_strides)
    an, bn = 1, 1
    for s in ash:
        an *= s
    for s in bsh:
        bn *= s
    if an == 0 or bn == 0:
        return NO
    if not _dense(ash, ast) or not _dense(bsh, bst):
        return TOO_HARD
    a0, b0 = table.storage_offset(a) * a_isz, table.storage_offset(b) * b_isz
    a1, b1 = a0 + an * a_isz, b0 + bn * b_isz
    if a0 == b0 and a1 == b1:  # (the strides of size-1 dims do not matter: compared without them)
        same = ash == bsh and all(s == 1 or t == u for s, t, u in zip(ash, ast, bst))
        return FULL if same else PARTIAL
    return PARTIAL if a0 < b1 and b0 < a1 else NO


def broadcast_strides(shape, strides, to_shape) -> tuple:
    """The element strides of an array of ``shape``/``strides`` expanded to ``to_shape`` (0 along broadcast dims)."""
    lead = len(to_shape) - len(shape)
    return tuple(0 if i < lead or (shape[i - lead] == 1 and n != 1) else strides[i - lead]
                 for i, n in enumerate(to_shape))


def assert_no_partial_overlap(table, dst, src, dst_isz: int, src_isz: int, to_shape=None) -> None:
    """copy_, in-place binary ops, basic setitem: refuse a source that partly overlaps the destination (``src``
    broadcast to ``to_shape`` first when given: setitem expands its value, copy_ and add_ check it as it is)."""
    if dst is src or not table.has("same_storage") or not table.same_storage(dst, src):
        return
    sst = None
    if to_shape is not None and tuple(src.shape) != tuple(to_shape):
        sst = broadcast_strides(tuple(src.shape), tuple(table.strides(src)), tuple(to_shape))
    if status(table, dst, src, dst_isz, src_isz, to_shape if sst is not None else None, sst) == PARTIAL:
        raise RuntimeError(_MSG)


def assert_no_overlap(table, dst, src, dst_isz: int, src_isz: int) -> None:
    """index_put_ (advanced setitem): refuse a source that shares any memory with the destination."""
    if status(table, dst, src, dst_isz, src_isz) in (PARTIAL, FULL):
        raise RuntimeError(_MSG)
