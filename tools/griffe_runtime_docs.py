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
plain text, where the doctest lines run together.
"""
from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

_PACKAGE = "coretorch"
_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


def _examples_heading(obj: griffe.Object) -> None:
    """``Example:`` -> ``Examples:`` in ``obj``'s docstring (before griffe parses it)."""
    if obj.docstring is not None and "Example:" in obj.docstring.value:
        obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)


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
