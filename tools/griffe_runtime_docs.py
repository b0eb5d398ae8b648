"""A griffe extension for the API reference (mkdocs.yml loads it): the docstrings coretorch has at run time.

mkdocstrings reads coretorch's source (fast: ~2 s), but some of the API only exists once coretorch is imported:
the Tensor methods bound in a loop (``coretorch/_tensor_methods.py``, declared for type checkers by
``coretorch/_tensor_api.pyi``), the ops made by factories (``exp = _make_unary("exp", ...)``) and the docstrings
``coretorch/_docs`` attaches to them.  After the package is read, this extension fills every object's missing
docstring from the imported object, and gives Tensor the runtime methods of ``TensorAPI`` (the stub class
Tensor derives from only under ``TYPE_CHECKING``) with the runtime docstrings.  Importing every module for its
objects instead (``force_inspection``) takes ~10x longer.

It also reads the docstrings' ``Example:`` sections (PyTorch's heading) as Google style's ``Examples:``, so that
their ``>>>`` lines render as code: griffe knows only the plural, and renders ``Example:`` as an admonition of
plain text, where the doctest lines run together.  And an Args entry naming several parameters at once
(``dtype, device, requires_grad: of the result.``, PyTorch's shorthand) becomes one entry per name: Google style
has one name per entry, and griffe would render the list as one row named ``dtype, device, requires_grad`` (or,
with a type per name, read everything up to the last ``)`` as the first name's type).

Names in annotations and docstring types resolve as Python resolves them: griffe looks a name up in the object's
scope and then in each *parent package* too, so ``requires_grad: bool`` anywhere under ``coretorch`` became
``coretorch.bool`` (the dtype ``bool_``) in the reference; a builtin name not defined in its own module now stays
the builtin.
"""
from __future__ import annotations

import builtins
import importlib
import inspect
import re
from typing import Any

import griffe

_PACKAGE = "coretorch"
_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.M)
_PARAMS = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$")
_ONE_NAME = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(?:\((.*)\))?$")


def _top_level_split(text: str, sep: str) -> list[str]:
    """``text`` split at each ``sep`` outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _split_entry(line: str) -> list[tuple[str, str | None, str]] | None:
    """``"a, b (T): desc"`` -> ``[("a", "T", " desc"), ("b", "T", " desc")]``; None unless it names several."""
    head, colon, desc = line.partition(":")
    if not colon or "," not in head:
        return None
    # the ':' ending the entry's head is the first one outside parentheses
    pieces = _top_level_split(line, ":")
    if len(pieces) < 2:
        return None
    head, desc = pieces[0], ":".join(pieces[1:])
    names = [_ONE_NAME.match(p.strip()) for p in _top_level_split(head, ",")]
    if len(names) < 2 or not all(names):
        return None
    out: list[tuple[str, str | None, str]] = []
    shared = None
    for m in reversed(names):  # "a, b (T)": the last type applies to the names before it that have none
        assert m is not None
        shared = m.group(2) if m.group(2) is not None else shared
        out.append((m.group(1), shared, desc))
    return out[::-1]


def split_name_lists(doc: str) -> str:
    """One Args entry per parameter name (see the module docstring); other text unchanged."""
    lines = doc.split("\n")
    out: list[str] = []
    section_indent: int | None = None
    item_indent: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = len(line) - len(line.lstrip())
        m = _PARAMS.match(line)
        if m:
            section_indent, item_indent = len(m.group(1)), None
            out.append(line)
            i += 1
            continue
        if section_indent is not None and line.strip() and indent <= section_indent:
            section_indent = None
        if section_indent is not None and line.strip():
            item_indent = indent if item_indent is None else item_indent
            entries = _split_entry(line.strip()) if indent == item_indent else None
            if entries:
                block = []  # the description's continuation lines go with every name
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
                    block.append(lines[j])
                    j += 1
                while block and not block[-1].strip():
                    block.pop()
                    j -= 1
                for name, typ, desc in entries:
                    out.append(" " * indent + name + (f" ({typ})" if typ is not None else "") + ":" + desc)
                    out.extend(block)
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


_BUILTIN_NAMES = frozenset(dir(builtins))
_griffe_resolve = griffe.Object.resolve


def _resolve_python_scope(self: griffe.Object, name: str) -> str:
    """``griffe.Object.resolve`` with Python's rule for builtins: the scopes up to the object's module, not the
    packages above it (``coretorch.bool`` is the dtype, ``bool`` in ``coretorch.ops.creation`` the builtin)."""
    if name in _BUILTIN_NAMES and self.path.split(".")[0] == _PACKAGE:
        obj: Any = self
        while obj is not None and name not in obj.members and not obj.is_module:
            obj = obj.parent
        if obj is None or name not in obj.members:
            raise griffe.NameResolutionError(f"{name} is Python's builtin in the scope of {self.path}")
    return _griffe_resolve(self, name)


def _examples_heading(obj: griffe.Object) -> None:
    """``Example:`` -> ``Examples:`` in ``obj``'s docstring (before griffe parses it)."""
    if obj.docstring is not None and "Example:" in obj.docstring.value:
        obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
    if obj.docstring is not None and "," in obj.docstring.value:
        obj.docstring.value = split_name_lists(obj.docstring.value)


def _runtime(path: str) -> Any:
    """The imported object at a dotted ``path`` (None where it cannot be reached)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except Exception:
            continue
        try:
            for p in parts[i:]:
                obj = inspect.getattr_static(obj, p) if isinstance(obj, type) else getattr(obj, p)
        except AttributeError:
            return None
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            obj = obj.fget
        return obj
    return None


def _doc_of(obj: Any) -> str | None:
    if obj is None:
        return None
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__")
    else:
        doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    return inspect.cleandoc(doc)


class RuntimeDocstrings(griffe.Extension):
    """Fill missing docstrings of the ``coretorch`` package from the imported objects."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != _PACKAGE:
            return
        griffe.Object.resolve = _resolve_python_scope  # type: ignore[method-assign]
        self._fill(pkg, set())
        # Tensor's runtime methods: the stub class TensorAPI holds their signatures, the imported Tensor their docs
        api = pkg.members.get("_tensor_api")
        if api is not None and "TensorAPI" in api.members:
            for name, member in api.members["TensorAPI"].members.items():
                if member.is_alias or member.docstring is not None:
                    continue
                doc = _doc_of(_runtime(f"{_PACKAGE}.Tensor.{name}"))
                if doc:
                    member.docstring = griffe.Docstring(doc, parent=member)
                    _examples_heading(member)

    def _fill(self, obj: griffe.Object, seen: set[int]) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for member in list(obj.members.values()):
            if member.is_alias:
                continue
            if member.name.startswith("_") and not member.is_module and member.name != "__init__":
                continue
            if member.docstring is None and (member.is_function or member.is_attribute or member.is_class):
                doc = _doc_of(_runtime(member.path))
                if doc and (member.is_function or member.is_class or callable(_runtime(member.path))):
                    member.docstring = griffe.Docstring(doc, parent=member)
            _examples_heading(member)
            if member.is_module or member.is_class:
                self._fill(member, seen)
