"""Which public names of coretorch have no docstring: the measure behind tests/test_docs.py.

A *public name* is what a user reaches without an underscore, per namespace:

- a module namespace (``coretorch``, ``coretorch.nn.functional``, ``coretorch.linalg``, ...): its functions and
  classes defined inside coretorch (``__all__`` where the module has one, else every attribute); constants, dtype
  objects and submodules are not counted (a docstring cannot be attached to them);
- ``Tensor``: every public method and property of the class (bound at import time included);
- classes of a namespace (``nn`` modules, optimizers, schedulers, distributions, datasets, ...): the class itself
  and each public method or property it defines or overrides.  A method overriding a documented base-class method
  inherits that docstring (``inspect.getdoc``'s rule, and mkdocstrings shows it); ``forward`` and ``extra_repr``
  of a Module subclass are described by the class docstring (PyTorch's convention), so they are not counted;
- a namespace made of submodules (``backends.cudnn``, ``cuda.amp``): each submodule's names, as above;
- ``distributed``: the names the installed distributed plugin (coretorch-distributed-mpi) puts there.

    python tools/doc_coverage.py                 # per-namespace coverage table
    python tools/doc_coverage.py --missing       # every undocumented name, one per line
    python tools/doc_coverage.py --missing nn    # ... of one namespace
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
import types
from typing import Any, Iterator

HERE = os.path.dirname(os.path.abspath(__file__))

# label -> module path; the order is the report's (most-used first)
NAMESPACES: dict[str, str] = {
    "torch": "coretorch",
    "Tensor": "coretorch",  # (the class, below)
    "nn": "coretorch.nn",
    "nn.functional": "coretorch.nn.functional",
    "nn.init": "coretorch.nn.init",
    "nn.utils": "coretorch.nn.utils",
    "optim": "coretorch.optim",
    "optim.lr_scheduler": "coretorch.optim.lr_scheduler",
    "autograd": "coretorch.autograd",
    "utils.data": "coretorch.utils.data",
    "linalg": "coretorch.linalg",
    "special": "coretorch.special",
    "distributions": "coretorch.distributions",
    "amp": "coretorch.amp",
    "plugins": "coretorch.plugins",
    "testing": "coretorch.testing",
    # the namespaces scripts touch besides the model code: devices, flags, export stubs, RNG, sparse
    "sparse": "coretorch.sparse",
    "distributed": "coretorch.distributed",
    "random": "coretorch.random",
    "accelerator": "coretorch.accelerator",
    "cuda": "coretorch.cuda",
    "backends": "coretorch.backends",
    "mps": "coretorch.mps",
    "xpu": "coretorch.xpu",
    "compiler": "coretorch.compiler",
    "jit": "coretorch.jit",
    "onnx": "coretorch.onnx",
    "multiprocessing": "coretorch.multiprocessing",
    "autograd.graph": "coretorch.autograd.graph",
    "utils.checkpoint": "coretorch.utils.checkpoint",
    "func": "coretorch.func",
    "profiler": "coretorch.profiler",
    "utils.hooks": "coretorch.utils.hooks",
    "return_types": "coretorch.return_types",
    "serialization": "coretorch.serialization",
}
# namespaces whose public names live in submodules, counted (and documented) under ``label.sub.name``
SUBMODULES: dict[str, tuple[str, ...]] = {
    "backends": ("cpu", "cuda", "cudnn", "mkldnn", "mps", "opt_einsum"),
    "cuda": ("amp",),
    "nn.utils": ("rnn", "parametrize", "parametrizations"),
}
# namespaces a plugin fills at run time: its names count as the namespace's own (coretorch.distributed is
# coretorch-distributed-mpi's API once that plugin is installed)
PLUGIN_PACKAGES: dict[str, tuple[str, ...]] = {"distributed": ("coretorch_distributed_mpi",)}
_MODULE_OWN = ("forward", "extra_repr")  # described by a Module subclass's class docstring


def _own_doc(obj: Any) -> str | None:
    """The docstring written for ``obj`` itself (a class's own, not inherited from its base)."""
    if isinstance(obj, type):
        return obj.__dict__.get("__doc__")
    if isinstance(obj, property):
        return obj.__doc__ or (obj.fget.__doc__ if obj.fget else None)
    return getattr(obj, "__doc__", None)


def _is_ours(obj: Any, packages: tuple[str, ...] = ()) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod.split(".")[0] in ("coretorch",) + packages


def _public(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return sorted(set(names))


def _member_doc(cls: type, name: str) -> str | None:
    for klass in cls.__mro__:  # the first class defining the name, then inherited docs (inspect.getdoc's rule)
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            doc = _own_doc(attr)
            if doc and doc.strip():
                return doc
            break
    try:
        return inspect.getdoc(getattr(cls, name))
    except Exception:
        return None


def _class_members(cls: type, module_cls: type | None) -> Iterator[str]:
    """Public methods/properties ``cls`` defines itself (overrides included), in a stable order."""
    for name, attr in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        if module_cls is not None and cls is not module_cls and issubclass(cls, module_cls) and name in _MODULE_OWN:
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, (types.FunctionType, property)) or inspect.isroutine(attr):
            yield name


def _tensor_members() -> Iterator[tuple[str, Any]]:
    import coretorch
    T = coretorch.Tensor
    for name in sorted(dir(T)):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(T, name)
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, (types.FunctionType, property, types.BuiltinFunctionType)) or inspect.isroutine(attr):
            yield name, attr


def names(label: str) -> dict[str, bool]:
    """``{qualified public name: has a docstring}`` for one namespace."""
    return {n: bool(doc and doc.strip()) for n, doc in docstrings(label).items()}


def docstrings(label: str) -> dict[str, str | None]:
    """``{qualified public name: its docstring}`` for one namespace (tests/test_doctests.py runs their examples)."""
    if label == "Tensor":
        return {f"Tensor.{name}": _own_doc(attr) for name, attr in _tensor_members()}
    out: dict[str, str | None] = {}
    module = importlib.import_module(NAMESPACES[label])
    for sub in SUBMODULES.get(label, ()):
        out.update(_module_docs(importlib.import_module(f"{NAMESPACES[label]}.{sub}"), f"{label}.{sub}", ()))
    out.update(_module_docs(module, label, PLUGIN_PACKAGES.get(label, ())))
    return dict(sorted(out.items()))


def _module_docs(module: types.ModuleType, label: str, packages: tuple[str, ...]) -> dict[str, str | None]:
    import coretorch
    out: dict[str, str | None] = {}
    module_cls = coretorch.nn.Module
    for name in _public(module):
        obj = getattr(module, name, None)
        if obj is None or isinstance(obj, types.ModuleType) or not _is_ours(obj, packages):
            continue
        if label == "torch" and obj is coretorch.Tensor:
            continue  # its own namespace
        if isinstance(obj, type):
            out[f"{label}.{name}"] = _own_doc(obj)
            for member in _class_members(obj, module_cls):
                out[f"{label}.{name}.{member}"] = _member_doc(obj, member)
        elif callable(obj):
            out[f"{label}.{name}"] = _own_doc(obj)
    return out


def all_names() -> dict[str, bool]:
    out: dict[str, bool] = {}
    for label in NAMESPACES:
        out.update(names(label))
    return out


def main(argv: list[str]) -> int:
    sys.path.insert(0, os.path.join(HERE, os.pardir))
    if "--missing" in argv:
        rest = [a for a in argv if not a.startswith("--")]
        for label in rest or list(NAMESPACES):
            for n, ok in names(label).items():
                if not ok:
                    print(n)
        return 0
    total = documented = 0
    print(f"{'namespace':<22}{'documented':>12}{'total':>8}{'%':>8}")
    for label in NAMESPACES:
        got = names(label)
        d = sum(got.values())
        total += len(got)
        documented += d
        print(f"{label:<22}{d:>12}{len(got):>8}{100.0 * d / max(len(got), 1):>7.1f}%")
    print(f"{'all':<22}{documented:>12}{total:>8}{100.0 * documented / max(total, 1):>7.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
