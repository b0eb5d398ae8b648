"""Review 16g: the session's last changes — a forward compiled in a module's class body (per-instance module
capture), ``detach()``/``.data`` of views taking the view's root as base (and compile keying ``_base`` only where the
code reads it), module forwards returning nested structures (outtree.py)."""
import coretorch as torch


def _w(device):
    return torch.ones(4, device=device, requires_grad=True)


def test_detached_requires_grad_is_no_view_of_root(device):
    """``d = a.detach().requires_grad_()`` (or of a view ``a[1:3]``, or ``a.data``), then ``a.mul_(3)``: eager
    PyTorch keeps d a leaf (d.grad 2s, w.grad None).  Before: d's grad_fn was regenerated as an AsStridedBackward0 of
    a's new graph (the detached tensor's ``_base`` is kept for its storage), so the gradient silently went to ``w``
    and d.grad stayed None."""
    for make in (lambda a: a.detach(), lambda a: a[1:3].detach(), lambda a: a.data, lambda a: a[1:3].data,
                 lambda a: a.detach()[1:3]):
        w = _w(device)
        a = w.clone()
        d = make(a).requires_grad_()
        a.mul_(3)
        assert d.is_leaf and d.grad_fn is None
        (d * 2).sum().backward()
        assert w.grad is None
        assert d.grad.tolist() == [2.0] * d.shape[0]


def test_inplace_on_detached_records_own_graph(device):
    """``a.detach().mul_(w2)`` (a requires grad): eager gives d a MulBackward0 and leaves a's CloneBackward0 alone.
    Before: NotImplementedError (the detached tensor was taken for a view of a tensor requiring grad)."""
    w, w2 = _w(device), torch.full((4,), 5.0, device=device, requires_grad=True)
    a = w.clone()
    d = a.detach()
    d.mul_(w2)
    assert d.grad_fn is not None and type(a.grad_fn).__name__ == "CloneBackward0"
    d.sum().backward()
    assert w2.grad.tolist() == [1.0] * 4 and w.grad is None
    a = w.clone()
    d = a[1:3].detach()
    d.mul_(w2[:2])
    assert d.grad_fn is not None and type(a.grad_fn).__name__ == "CloneBackward0" and a._version == 1


def test_detach__of_detached_view(device):
    """``a[1:3].detach().detach_()`` (a requires grad): eager allows it (a detached tensor is no view).  Before:
    "Can't detach views in-place"."""
    a = _w(device).clone()
    d = a[1:3].detach()
    assert d.detach_() is d and not d.requires_grad


def test_view_of_detached_view_storage(device):
    """A view of a detached view counts its storage offset from the root, as eager: ``x[2:5].detach()[1:]`` has
    storage_offset 3 and as_strided from it reads x[3], x[4]."""
    x = torch.arange(6.0, device=device)
    e = x[2:5].detach()[1:]
    assert e.storage_offset() == 3
    assert e.as_strided((2,), (1,)).tolist() == [3.0, 4.0]


def test_compiled_detach_result_is_no_view_for_autograd(device):
    """A compiled function or module returning ``a.detach()``/``a[1:3].detach()``/``a.data``: the replay's results
    are detached as eager's (requires_grad_() on one, then an in-place op on ``a``: its gradient stays its own).
    Before (after the eager fix) the replay's results were plain views: the gradient went to ``w``."""
    def f(a):
        return a.detach(), a[1:3].detach(), a.data

    class M(torch.nn.Module):
        def forward(self, a):
            return a.detach(), a[1:3].detach(), a.data

    for fn in (torch.compile(f), torch.compile(M())):
        for _ in range(3):
            w = _w(device)
            a = w.clone()
            outs = fn(a)
            for d in outs:
                d.requires_grad_()
            a.mul_(3)
            sum((d * 2).sum() for d in outs).backward()
            assert w.grad is None
            assert [d.grad.tolist() for d in outs] == [[2.0] * 4, [2.0] * 2, [2.0] * 4]


def _plain(device):
    return torch.arange(4.0, device=device)


def _view_of(n):
    return lambda device: torch.arange(float(n), device=device)[2:6]


def test_compiled_module_keys_base_it_reads(device):
    """A compiled module whose forward branches on ``x._base is None``: eager gives x*2 for a plain tensor, x*3 for
    a view.  Before: the module capture's key lost the arguments' view-ness with c756e24 (only functions keyed it
    where the code reads ``_base``), so a view replayed the plain capture (x*2)."""
    class N(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x._base is None else x * 3

    m, cm = N(), torch.compile(N())
    for mk in (_plain, _plain, _view_of(8), _view_of(8), _plain):
        assert torch.equal(cm(mk(device)), m(mk(device)))


def test_compiled_untyped_storage_size_of_view(device):
    """``x * x.untyped_storage().nbytes()`` (a function and a module forward): eager reads the size of the memory
    the view's base owns (32 bytes for ``arange(8.)[2:6]``, 40 for ``arange(10.)[2:6]``, 16 for a plain
    ``arange(4.)``).  Before: the replay of the first capture returned the first call's size (neither the
    arguments' view-ness nor the base's size is in the guard key)."""
    def f(x):
        return x * x.untyped_storage().nbytes()

    class M(torch.nn.Module):
        def forward(self, x):
            return x * x.untyped_storage().nbytes()

    for fn, cf in ((f, torch.compile(f)), (M(), torch.compile(M()))):
        for mk in (_plain, _plain, _view_of(8), _view_of(8), _view_of(10), _view_of(10), _plain):
            assert torch.equal(cf(mk(device)), fn(mk(device)))


def test_compiled_view_of_view_argument_keeps_storage_offset(device):
    """A compiled function returning ``x[1:].detach()`` or ``x.detach()[1:]`` of an argument ``x`` that is itself a
    view (``arange(8.).view(4, 2)``): eager's results count their storage_offset (2) from x's root.  Before: the
    replay's results had no base (the root is no argument), storage_offset 0."""
    def f(x):
        return x[1:].detach(), x.detach()[1:], x[1:]

    cf = torch.compile(f)
    for _ in range(3):
        x = torch.arange(8.0, device=device).view(4, 2)
        for e, c in zip(f(x), cf(x)):
            assert (c.storage_offset(), c.untyped_storage().nbytes()) == (e.storage_offset(),
                                                                          e.untyped_storage().nbytes()) == (2, 32)
        x = torch.arange(8.0, device=device).view(4, 2).clone()  # no view at the replay: its root is itself
        for e, c in zip(f(x), cf(x)):
            assert c.storage_offset() == e.storage_offset() == 2


def test_inplace_on_view_of_tensor_without_grad_joins_graph(device):
    """``x = torch.zeros(4); x[1:3].copy_(w)`` (or ``.add_(w)``), w requiring grad: eager PyTorch gives x a
    CopySlices node, so ``(x * 1).sum().backward()`` gives w.grad ones (setitem ``x[1:3] = w`` did already).
    Before: x stayed without grad (the view got w's node, the base none): the backward raised "does not require
    grad", or, where x met another tensor requiring grad, w's gradient was silently lost."""
    for op in ("copy_", "add_"):
        w = torch.ones(2, device=device, requires_grad=True)
        u = torch.ones(4, device=device, requires_grad=True)
        x = torch.zeros(4, device=device)
        getattr(x[1:3], op)(w)
        assert x.requires_grad and x.grad_fn is not None
        (x * u).sum().backward()
        assert w.grad.tolist() == [1.0, 1.0] and u.grad.tolist() == x.tolist()


def test_compiled_reads_version_counter(device):
    """``x * x._version`` compiled: eager multiplies by the argument's version (1, then 2 after two in-place ops).
    Before: the replay multiplied by the capture's version (1) — the counter is in no guard."""
    def h(x):
        return x * x._version

    ch = torch.compile(h)
    for n in (1, 1, 2, 2, 3):
        t = torch.zeros(4, device=device)
        for _ in range(n):
            t.add_(1)
        assert torch.equal(ch(t), h(t))
