"""Host reads at the return of a compiled function: ``return loss.item()``, ``return {"loss": loss.item(), "acc":
acc.item(), "out": out.detach()}``, ``v = loss.item(); return v``, ``hist.append(loss.item()); return loss``.

A host read (``.item()``, ``.tolist()``, ``float(t)``...) in a compiled step is a graph break: the Python after it
runs with the value, which a replay cannot repeat. PyTorch compiles the part before such a read and runs the rest as
Python; coretorch replays whole calls, so a read is kept in the replay only where the Python after it cannot depend
on the value: the check simulates the bytecode of the compiled function's own frame from the read to its return
(one straight line, outside any ``try`` or ``with``) on tags of the stack's entries. Allowed are loads of locals,
cells, globals and constants, stores into locals, calls of methods of the locals' plain tensors and of what those
return (coretorch's methods and attributes, not ones set on a tensor: recorded as any op, a replay repeats them),
further ``.item()``/``.tolist()`` reads, appending a read to a plain list held by a global or a closure cell (the
replay appends its value to the list the name holds then: a :class:`ListRef`), and building tuples, lists and dicts
with constant or plain local keys. Nothing there runs user code or takes the value anywhere but into the result (or
that list), so a replay that reads the array at the
same point returns what the eager call returns. (``float(t)``, ``int(t)`` and ``bool(t)`` stay graph breaks: Python
takes only a number from ``__float__``, so the capture could not mark it.)

During the capture the read returns a :class:`Placeholder`; the recorder records a read of the array at that point
of the replay (``TAILREAD``) and encodes the placeholder in the result as its value. The capture's own result gets
the eager values in their place (the containers holding one were built by the return, so they are the result's
own)."""
from __future__ import annotations

import dataclasses
import dis
import types
from types import CodeType, FrameType
from typing import Any

from ..tensor import Tensor
from .symbolic import Sym

READS = ("item", "tolist")
_SKIP = frozenset({"NOP", "CACHE", "PRECALL", "EXTENDED_ARG", "PUSH_NULL", "KW_NAMES", "RESUME"})
_LOADS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF"})
_CALLS = frozenset({"CALL", "CALL_METHOD", "CALL_FUNCTION"})
_PLAIN = (str, int, float, bool, bytes, type(None))
_NOT_PLAIN = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator code
_SETUPS = ("SETUP_FINALLY", "SETUP_WITH", "SETUP_ASYNC_WITH")  # Python 3.10's try/with blocks
_UNKNOWN = ("unknown",)


class ListRef:
    """Where a list a read at the return is appended to lives (``hist.append(loss.item())``): a global of the
    function's module or a cell of its closure, looked up again at each replay (the name may be bound anew)."""

    __slots__ = ("ns", "name", "cell")

    def __init__(self, ns: dict | None, name: str, cell: Any = None):
        self.ns, self.name, self.cell = ns, name, cell

    def get(self) -> Any:
        return self.cell.cell_contents if self.cell is not None else self.ns[self.name]  # type: ignore[index]


def append(ref: ListRef, value: Any) -> None:
    """The replay's append (``APPEND``)."""
    ref.get().append(value)


class Placeholder:
    """What a read at the return gives during the capture: its value (the capture's result gets it back)."""

    __slots__ = ("value", "name")

    def __init__(self, value: Any, name: str):
        self.value, self.name = value, name


def tail_read(table: Any, array: Any, how: str) -> Any:
    """The replay's read (``TAILREAD``): what the Tensor method ``how`` gives for ``array`` (tensor.py's)."""
    a = table.to_numpy(array)
    return a.tolist() if how == "tolist" else a.reshape(()).item()


def at_return(frame: FrameType, fn: Any, how: str) -> tuple[bool, ListRef | None]:
    """Whether the read ``how`` running in ``frame`` is followed by nothing but the return of the compiled function
    ``fn`` (whose frame the capture called), as the module docstring says; and the list it is appended to, if it
    is (``hist.append(loss.item())``)."""
    code = getattr(fn, "__code__", None)
    if code is None or frame.f_code is not code or code.co_flags & _NOT_PLAIN or _nested(frame, code):
        return False, None
    every = list(dis.get_instructions(code))
    ins = [i for i in every if i.opname not in _SKIP]
    # (the call running now: f_lasti is its offset, or that of its last inline cache entry on Python 3.11)
    at = next((k for k in range(len(ins) - 1, -1, -1) if ins[k].offset <= frame.f_lasti), None)
    if at is None or at < 2 or ins[at].opname not in _CALLS or ins[at].arg != 0 or _guarded(code, every, ins[at]):
        return False, None
    m, r = ins[at - 1], ins[at - 2]
    if not (_method(m) and m.argval == how):
        return False, None
    stack = _below(ins, at - 2, frame, fn) if r.opname in _LOADS else []  # (below another receiver: unknown)
    stack.append(("read", True))
    appended: list = []
    return _pure_tail(ins, at + 1, frame, stack, appended), (appended[0] if appended else None)


def _nested(frame: FrameType, code: CodeType) -> bool:
    """Whether ``frame`` runs inside another call of ``code``: a recursive call through the compiled function (which
    runs its own function during a capture), whose caller goes on with the value."""
    outer = frame.f_back
    while outer is not None:
        if outer.f_code is code:
            return True
        outer = outer.f_back
    return False


def _method(i: Any) -> bool:
    """A load of a method to call (3.10/3.11's LOAD_METHOD, 3.12's LOAD_ATTR with its method flag)."""
    return i.opname == "LOAD_METHOD" or i.opname == "LOAD_ATTR" and "NULL|self" in i.argrepr


def _guarded(code: CodeType, every: list, call: Any) -> bool:
    """Whether an exception at ``call`` would go to a handler of the function (a ``try`` or ``with`` around it)."""
    entries = getattr(dis.Bytecode(code), "exception_entries", None)
    if entries is not None:  # Python 3.11+: the exception table
        return any(e.start <= call.offset < e.end for e in entries)
    return any(i.opname in _SETUPS and i.offset < call.offset < i.argval for i in every)


def _below(ins: list, start: int, frame: FrameType, fn: Any) -> list:
    """The stack entries below the read's call that plain loads just before it pushed (a dict's key), or the
    ``append`` method of a list held by a global or a closure cell; deeper ones are unknown (fine in a tuple or a
    list, not as a key or an argument)."""
    out: list = []
    k = start - 1
    while k >= 0 and ins[k].opname in ("LOAD_CONST", *_LOADS):
        out.append(("const", ins[k].argval) if ins[k].opname == "LOAD_CONST" else _local(frame, ins[k].argval))
        k -= 1
    if k == start - 1 and k >= 1 and _method(ins[k]) and ins[k].argval == "append":
        ref = _list_ref(ins[k - 1], frame, fn)
        if ref is not None:
            out.append(("append", ref))
    out.reverse()
    return out


def _list_ref(load: Any, frame: FrameType, fn: Any) -> ListRef | None:
    """A plain list loaded by ``load`` from the function's globals or its closure, else None."""
    name = load.argval
    if load.opname == "LOAD_GLOBAL":
        ns = frame.f_globals
        return ListRef(ns, name) if name in ns and type(ns[name]) is list else None
    if load.opname == "LOAD_DEREF" and name in fn.__code__.co_freevars and fn.__closure__:
        cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
        try:
            return ListRef(None, name, cell) if type(cell.cell_contents) is list else None
        except ValueError:  # an empty cell
            return None
    return None


def _local(frame: FrameType, name: str) -> tuple:
    locs = frame.f_locals
    return ("value", locs[name]) if name in locs else _UNKNOWN


def _tensor(tag: tuple) -> bool:
    """A plain tensor among the locals, or what a method of one returned (core code: no user hooks run)."""
    return tag == ("result",) or tag[0] == "value" and type(tag[1]) is Tensor


def _core(tag: tuple, name: str) -> bool:
    """Whether ``name`` of the entry tagged ``tag`` is a plain tensor's attribute or method of coretorch's class, not
    one set on the tensor by the user (``x.meta = Meta()``, ``x.cb = fn``: their code would run)."""
    if not _tensor(tag) or not hasattr(Tensor, name):
        return False
    d = getattr(tag[1], "__dict__", None) if tag[0] == "value" else None
    return not (d and name in d)


def _plain_arg(tag: tuple) -> bool:
    return tag[0] == "const" or _tensor(tag) or tag[0] == "value" and type(tag[1]) in _PLAIN


def _pure_tail(ins: list, k: int, frame: FrameType, stack: list, appended: list) -> bool:
    """Run the instructions from ``k`` on the tags of their stack entries: True if they reach the return through
    nothing but what the module docstring allows (``appended`` gets the list the first read goes to, if any)."""
    stored: dict = {}

    def pop(n: int) -> list:
        got = [stack.pop() if stack else _UNKNOWN for _ in range(n)]
        got.reverse()
        return got

    def load(name: str) -> tuple:
        return stored[name] if name in stored else _local(frame, name)

    for i in ins[k:]:
        op, arg = i.opname, i.argval
        if op in ("RETURN_VALUE", "RETURN_CONST"):
            return True
        if op == "LOAD_CONST":
            stack.append(("const", arg))
        elif op in _LOADS:
            stack.append(load(arg))
        elif op == "LOAD_GLOBAL":  # (a call of it is no method call: refused below)
            stack.append(("value", frame.f_globals[arg]) if arg in frame.f_globals else _UNKNOWN)
        elif op == "LOAD_FAST_LOAD_FAST":
            stack.extend(load(n) for n in arg)
        elif op in ("STORE_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"):
            names = arg if isinstance(arg, tuple) else (arg,)
            for name in names[:2 if op == "STORE_FAST_STORE_FAST" else 1]:
                stored[name] = pop(1)[0]
            if op == "STORE_FAST_LOAD_FAST":
                stack.append(load(names[-1]))
        elif _method(i) and arg == "append":  # (a later read's append: its own check finds the list)
            recv = pop(1)[0]
            if not (recv[0] == "value" and type(recv[1]) is list):
                return False
            stack.append(("append", None))
        elif _method(i):
            if not _core(pop(1)[0], arg):
                return False
            stack.append(("read method",) if arg in READS else ("method",))
        elif op == "LOAD_ATTR":  # an attribute of a tensor (``out.shape``, ``w.grad``)
            if not _core(pop(1)[0], arg):
                return False
            stack.append(("result",))
        elif op in _CALLS:
            args = pop(arg)
            fn = pop(1)[0]
            if fn == ("read method",) and not args:
                stack.append(("read", False))
            elif fn == ("method",) and all(_plain_arg(a) for a in args):
                stack.append(("result",))
            elif fn[0] == "append" and (args == [("read", False)] or
                                        args == [("read", True)] and fn[1] is not None and not appended):
                if args[0][1]:  # this read, into the list
                    appended.append(fn[1])
                stack.append(("const", None))
            else:
                return False
        elif op == "POP_TOP":
            pop(1)
        elif op in ("BUILD_TUPLE", "BUILD_LIST"):
            pop(arg)
            stack.append(("built",))
        elif op == "BUILD_MAP":
            items = pop(2 * arg)
            if not all(t[0] in ("const", "value") and type(t[1]) in _PLAIN for t in items[::2]):
                return False
            stack.append(("built",))
        elif op == "BUILD_CONST_KEY_MAP":
            pop(arg + 1)
            stack.append(("built",))
        else:  # a jump, an operator, a global, a call of anything else: not pure
            return False
    return False


def substitute(obj: Any, depth: int = 0) -> Any:
    """``obj`` with each placeholder replaced by its value and each Sym by its float (the capture call's own result,
    eager's)."""
    if isinstance(obj, Placeholder):
        return obj.value
    if isinstance(obj, Sym):  # (a float argument's number: dynfloat.py)
        return float.__float__(obj)
    if depth > 16:
        return obj
    if isinstance(obj, tuple) and (type(obj) is tuple or hasattr(type(obj), "_fields")):  # (a namedtuple too)
        new = tuple(substitute(o, depth + 1) for o in obj)
        return obj if all(a is b for a, b in zip(new, obj)) else new if type(obj) is tuple else type(obj)(*new)
    if type(obj) is list:
        for n, o in enumerate(obj):
            s = substitute(o, depth + 1)
            if s is not o:
                obj[n] = s
    elif type(obj) is dict or type(obj) is types.SimpleNamespace or \
            dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        d = obj if type(obj) is dict else getattr(obj, "__dict__", {})  # (a dataclass's fields: frozen or not)
        for key, o in d.items():
            s = substitute(o, depth + 1)
            if s is not o:
                d[key] = s
    return obj


def appended_values(appends: list) -> None:
    """Put each appended read's value in its list in place of its placeholder (right after the capture's call)."""
    for ref, p in appends:
        try:
            lst = ref.get()
        except (KeyError, ValueError):  # (the name unbound since)
            continue
        for i in range(len(lst) - 1, max(-1, len(lst) - 64), -1):
            if lst[i] is p:
                lst[i] = p.value
                break
