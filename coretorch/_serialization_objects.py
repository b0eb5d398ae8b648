"""Whole objects in ``coretorch.save``/``coretorch.load``: ``torch.save(model, f)``, a user class in a checkpoint.

``save`` takes an object that is none of the format's own kinds (tensors, arrays, containers, numbers...) apart
through Python's reduce protocol, as pickle does (``copyreg.dispatch_table``, then ``__reduce_ex__(2)``): classes
and functions become ``{"global": [module, qualname]}`` nodes (checked to resolve to the same object, with pickle's
errors: a lambda or a local class cannot be saved), an object becomes an ``{"object": k, "new"|"call": global,
"args": ..., "state": ...}`` node whose arguments and state are encoded like any other value (its tensors stored
in the safetensors data, named by the keys reaching them: a module's ``fc.weight``), and a second reference to it a
``{"ref": k}`` (shared submodules and tied layers stay shared).  Nothing is pickled.

``load`` rebuilds them under PyTorch's ``weights_only`` rules: with ``weights_only=True`` (the default, as since
PyTorch 2.6) a global is used only if PyTorch allows it by default or ``torch.serialization.add_safe_globals`` /
``safe_globals`` allowed it, and is never imported (PyTorch's ``UnpicklingError`` names the one missing); only an
instance of an allowed class has its state set, only an exact list or dict its items (PyTorch's BUILD, APPENDS
and SETITEMS checks); with ``weights_only=False`` any importable
global is (creating the objects runs their classes' code: load such files only from a trusted source, as PyTorch's
pickle files)."""
from __future__ import annotations

import copyreg
import importlib
import pickle
import sys
import types
from collections import Counter, OrderedDict
from typing import Any

__all__ = ["encode_object", "decode_object", "unsafe_globals"]

# the key of a module's state whose dicts hold its members: not part of the names of the tensors inside
_MODULE_DICTS = frozenset(("_parameters", "_buffers", "_modules"))


# ---- saving -------------------------------------------------------------------------------------------------
def _lookup(module: str, qualname: str) -> Any:
    mod = sys.modules.get(module)
    if mod is None:
        mod = importlib.import_module(module)
    obj: Any = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _global(obj: Any, path: str) -> dict:
    """The node naming ``obj`` (a class, a function) by module and qualified name, as pickle's ``save_global``."""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None) or "__main__"
    if not isinstance(qualname, str):
        raise pickle.PicklingError(f"Can't pickle {obj!r}: it has no name (coretorch.save: {path[:200]})")
    if "<locals>" in qualname.split("."):
        raise AttributeError(f"Can't pickle local object {qualname!r} (coretorch.save: {path[:200]})")
    try:
        found = _lookup(module, qualname)
    except (ImportError, AttributeError):
        raise pickle.PicklingError(f"Can't pickle {obj!r}: attribute lookup {qualname} on {module} failed "
                                   f"(coretorch.save: {path[:200]})") from None
    if found is not obj:
        raise pickle.PicklingError(f"Can't pickle {obj!r}: it's not the same object as {module}.{qualname} "
                                   f"(coretorch.save: {path[:200]})")
    return {"global": [module, qualname]}


def encode_object(enc: Any, obj: Any, path: str, depth: int) -> dict:
    """The node of ``obj`` for :class:`coretorch._serialization_encode._Encoder` (which calls this for what is
    none of the format's own kinds)."""
    k = enc.memo.get(id(obj))
    if k is not None:
        return {"ref": k}
    if isinstance(obj, (type, types.FunctionType)) or (
            isinstance(obj, types.BuiltinFunctionType) and isinstance(getattr(obj, "__self__", None),
                                                                     (types.ModuleType, type(None)))):
        return _global(obj, path)
    # (a builtin method bound to an object, ``lst.append``, ``dict.fromkeys``: its reduce, ``getattr(obj, name)``)
    reduce = copyreg.dispatch_table.get(type(obj))
    rv = reduce(obj) if reduce is not None else obj.__reduce_ex__(2)  # (pickle's TypeError for a lock, a generator)
    if isinstance(rv, str):  # a module-level singleton
        return {"global": [getattr(obj, "__module__", None) or "builtins", rv]}
    if not isinstance(rv, tuple) or not 2 <= len(rv) <= 6:
        raise pickle.PicklingError(f"{type(obj).__qualname__}.__reduce__ must return a string or a tuple of 2 to 6 "
                                   f"items (coretorch.save: {path[:200]})")
    func, args, state, listitems, dictitems, setter = (*rv, None, None, None, None)[:6]
    node: dict[str, Any]
    if func is getattr(copyreg, "__newobj__"):  # cls.__new__(cls, *args)
        node = {"new": _global(args[0], path), "args": enc.item(tuple(args[1:]), "", path, depth)}
    elif func is getattr(copyreg, "__newobj_ex__", None):  # cls.__new__(cls, *args, **kwargs)
        node = {"new": _global(args[0], path), "args": enc.item(tuple(args[1]), "", path, depth),
                "kwargs": enc.item(dict(args[2]), "", path, depth)}
    else:
        node = {"call": _global(func, path), "args": enc.item(tuple(args), "", path, depth)}
    # (registered after the arguments, before the state, as pickle's memo: the state may refer back to the object)
    k = enc.memo[id(obj)] = len(enc.memo)
    enc.keep.append(obj)
    node = {"object": k, **node}
    if state is not None:
        if setter is not None:  # (the reduce's state_setter: called with the object and its state at load)
            node["setter"] = _global(setter, path)
        node["state"] = _state(enc, obj, state, path, depth)
    if listitems is not None:
        node["list"] = enc.item(list(listitems), "", path, depth)
    if dictitems is not None:
        node["dict"] = enc.item(dict(dictitems), "", path, depth)
    return node


def _state(enc: Any, obj: Any, state: Any, path: str, depth: int) -> Any:
    from .nn.modules.module import Module
    if isinstance(obj, Module) and type(state) is dict:  # tensors named as in the state dict: ``fc.weight``
        # (this dict node is one level below the object, as load counts it: a model that saves must load)
        depth += 1
        if depth >= enc.max_depth:
            raise ValueError(f"coretorch.save: {path[:200]} nests containers more than {enc.max_depth} levels deep, "
                             "more than coretorch.load accepts")
        return {"dict": [[enc.key(k, path, depth),
                          enc.item(v, "" if k in _MODULE_DICTS else str(k), f"{path}.{k}", depth)]
                         for k, v in state.items()]}
    return enc.item(state, "", path, depth)


# ---- loading ------------------------------------------------------------------------------------------------
def _weights_only_error(name: str) -> pickle.UnpicklingError:
    if name.startswith("builtins."):  # (PyTorch names builtins bare: ``GLOBAL eval``)
        name = name[len("builtins."):]
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those "
        "steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the default "
        "value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running `torch.load` with "
        "`weights_only` set to `False` will likely succeed, but it can result in arbitrary code execution. Do it "
        "only if you got the file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` "
        "please check the recommended steps in the following error message.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {name} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{name}])` or the `torch.serialization.safe_globals([{name}])` "
        "context manager to allowlist this global if you trust this class/function.\n\nCheck the documentation of "
        "torch.load to learn more about types accepted by default with weights_only "
        "https://pytorch.org/docs/stable/generated/torch.load.html.")


def _refused(why: str) -> pickle.UnpicklingError:
    """PyTorch's error for a step its weights-only unpickler refuses even with the globals allowed."""
    return pickle.UnpicklingError(
        "Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
        "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
        "likely succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
        "trusted source.\nPlease file an issue with the following so that we can make `weights_only=True` "
        f"compatible with your use case: WeightsUnpickler error: \n\n{why}\n\nCheck the documentation of "
        "torch.load to learn more about types accepted by default with weights_only "
        "https://pytorch.org/docs/stable/generated/torch.load.html.")


def _default_allowed() -> list:
    """The coretorch counterparts of the globals PyTorch's weights-only unpickler allows without
    ``add_safe_globals`` (``torch._weights_only_unpickler._get_allowed_globals``): a class attribute or argument
    naming one of them loads by default, as in PyTorch."""
    from collections import Counter, OrderedDict
    from .device import device
    from .nn.parameter import Parameter
    from .tensor import Size, Tensor
    # (not ``_codecs.encode``, which pickle uses for bytes, stored as such here: a crafted codec name would import
    # an ``encodings`` module, and load must import nothing)
    return [OrderedDict, Counter, set, complex, bytearray, Size, Tensor, device, Parameter]


def _allowed() -> dict[str, Any]:
    from ._serialization_args import get_safe_globals
    out: dict[str, Any] = {}
    for g in (*_default_allowed(), *get_safe_globals()):
        if isinstance(g, tuple):
            out[g[1]] = g[0]
        else:
            out[f"{getattr(g, '__module__', '')}.{getattr(g, '__qualname__', getattr(g, '__name__', ''))}"] = g
    return out


def unsafe_globals(structure: Any) -> list[str]:
    """The ``module.qualname`` of every class and function a saved structure names that ``load`` with
    ``weights_only=True`` would refuse now (PyTorch's ``get_unsafe_globals_in_checkpoint``): read from the JSON
    alone, nothing imported."""
    found: set[str] = set()
    stack = [structure]
    while stack:  # (iterative: the structure may be deep)
        node = stack.pop()
        if isinstance(node, dict):
            g = node.get("global")
            if isinstance(g, list) and len(g) == 2 and all(isinstance(x, str) for x in g):
                found.add(f"{g[0]}.{g[1]}")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found.difference(_allowed()))


def _resolve(dec: Any, node: Any) -> Any:
    g = node.get("global") if isinstance(node, dict) else None
    if not (isinstance(g, list) and len(g) == 2 and all(isinstance(s, str) and s for s in g)):
        raise dec.bad(f"bad global {g!r}")
    name = f"{g[0]}.{g[1]}"
    if dec.weights_only:
        allowed = dec.allowed if dec.allowed is not None else _allowed()
        dec.allowed = allowed
        if name not in allowed:
            raise _weights_only_error(name)
        return allowed[name]
    try:
        return _lookup(g[0], g[1])
    except (ImportError, AttributeError) as e:
        raise AttributeError(f"coretorch.load: the file names {name}, which cannot be found here ({e}); import or "
                             "define it before loading") from None


def decode_object(dec: Any, node: dict, kind: str, depth: int) -> Any:
    """The object of a ``global``, ``object`` or ``ref`` node (``dec``: coretorch.serialization's decoder)."""
    if kind == "global":
        return _resolve(dec, node)
    if kind == "ref":
        k = node["ref"]
        if type(k) is not int or k not in dec.memo:
            raise dec.bad(f"a reference to object {k!r} before it was made")
        return dec.memo[k]
    k = node["object"]
    if type(k) is not int or k in dec.memo:
        raise dec.bad(f"bad object number {k!r}")
    args = dec.decode(node.get("args", {"tuple": []}), depth + 1)
    if not isinstance(args, tuple):
        raise dec.bad(f"the arguments of object {k} are not a tuple")
    if "new" in node:
        cls = _resolve(dec, node["new"])
        if not isinstance(cls, type):
            raise dec.bad(f"object {k} is made by {cls!r}, which is not a class")
        kwargs = dec.decode(node["kwargs"], depth + 1) if "kwargs" in node else {}
        if type(kwargs) is not dict or not all(isinstance(key, str) for key in kwargs):
            raise dec.bad(f"the keyword arguments of object {k} are not a dict of strings")
        make, args = cls.__new__, (cls, *args)
    elif "call" in node:
        make, kwargs = _resolve(dec, node["call"]), {}
    else:
        raise dec.bad(f"object {k} says neither how it is made")
    try:
        obj: Any = make(*args, **kwargs)
    except MemoryError:  # (a crafted size, ``bytearray(10**12)``, ``Tensor(10**12)``: a clean error, not a crash)
        raise dec.bad(f"object {k} asks for more memory than there is") from None
    dec.memo[k] = obj
    if "state" in node:
        setter = _resolve(dec, node["setter"]) if "setter" in node else None  # (named before the state, as pickle)
        state = dec.decode(node["state"], depth + 1)
        # PyTorch's BUILD under weights_only: only an instance of an allowed type has its state set (a call of an
        # allowed function must not reach the __setstate__ of whatever it returned)
        if setter is not None:  # pickle calls a reduce's state_setter instead of __setstate__
            if dec.weights_only:  # (PyTorch's weights-only unpickler has no POP, which pickle writes for it)
                raise _refused("Unsupported operand 48")
            setter(obj, state)
        elif dec.weights_only and type(obj) not in (dec.allowed or {}).values():
            raise _refused("Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                           f"`add_safe_globals`, but got {type(obj)}")
        else:
            _setstate(dec, obj, state)
    if "list" in node:
        items = dec.decode(node["list"], depth + 1)
        if not isinstance(items, list):
            raise dec.bad(f"the items of object {k} are not a list")
        if dec.weights_only and type(obj) is not list:  # (PyTorch's APPENDS: lists only)
            raise _refused(f"Can only {'append to' if len(items) == 1 else 'extend'} lists, but got {type(obj)}")
        extend = getattr(obj, "extend", None)
        if extend is not None:
            extend(items)
        else:
            for v in items:
                obj.append(v)
    if "dict" in node:
        items = dec.decode(node["dict"], depth + 1)
        if not isinstance(items, dict):
            raise dec.bad(f"the items of object {k} are not a dict")
        if dec.weights_only and type(obj) not in (dict, OrderedDict, Counter):  # (PyTorch's SETITEMS)
            raise _refused(f"Can only SETITEM{'' if len(items) == 1 else 'S'} for dict, collections.OrderedDict, "
                           f"collections.Counter, but got {type(obj)}")
        for key, v in items.items():
            obj[key] = v
    return obj


def _setstate(dec: Any, obj: Any, state: Any) -> None:
    """pickle's BUILD: ``__setstate__``, else the instance dict (and slots) updated."""
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None and getattr(type(obj), "__setstate__", None) is not getattr(object, "__setstate__", 0):
        setstate(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if not (state is None or isinstance(state, dict)) or not (slots is None or isinstance(slots, dict)):
        raise dec.bad(f"the state of a {type(obj).__qualname__} is neither a dict nor a (dict, slots dict) pair")
    if state:
        obj.__dict__.update(state)
    if slots:
        for key, v in slots.items():
            setattr(obj, key, v)
