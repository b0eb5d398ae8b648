"""The project rule "no import circle spans modules".

The graph of module-level imports (those that run when a module is imported: at its top, in top-level ``if``/``try``
blocks and class bodies; not those inside functions, nor under ``if TYPE_CHECKING:``) between the modules of
coretorch/ and of the plugin packages has no cycle.  Package ``__init__`` modules aggregate and re-export, so an
edge into one (``from .. import ops as _ops``) does not count.  Op families that call each other (backward
formulas, composites) do it through names the importing module binds (``_LATE``) or through the package namespace
at call time.  The graph is read from the sources (ast), so the check runs no import and takes milliseconds.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = {
    "coretorch": "coretorch",
    "coretorch_cpu": "plugins/cpu_backend/coretorch_cpu",
    "coretorch_opencl": "plugins/opencl_backend/coretorch_opencl",
    "coretorch_extra_ops": "plugins/extra_ops/coretorch_extra_ops",
    "coretorch_distributed_mpi": "plugins/distributed_mpi/coretorch_distributed_mpi",
}


def _modules() -> dict[str, str]:
    """Dotted module name -> source path (a package under its own name, for its ``__init__.py``)."""
    mods = {}
    for pkg, rel in PACKAGES.items():
        base = os.path.join(ROOT, rel)
        for dirpath, _, files in os.walk(base):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    parts = os.path.relpath(path, base)[:-3].split(os.sep)
                    if parts[-1] == "__init__":
                        parts = parts[:-1]
                    mods[".".join([pkg, *parts])] = path
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module):
    """The import statements that run on import (skips function bodies and ``if TYPE_CHECKING:`` bodies)."""
    todo = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            yield n
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(n, ast.If) and _is_type_checking(n.test):
            todo.extend(n.orelse)
        elif isinstance(n, (ast.stmt, ast.ExceptHandler, ast.match_case)):
            for child in ast.iter_child_nodes(n):
                if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)):
                    todo.append(child)


def _base(name: str, is_pkg: bool, level: int, module: str) -> str:
    """The absolute module of ``from <level dots><module> import ...`` written in module ``name``."""
    if not level:
        return module
    parts = name.split(".") if is_pkg else name.split(".")[:-1]
    return ".".join(parts[:len(parts) - (level - 1)] + ([module] if module else []))


def _known(found: list, name: str, mods: dict) -> set:
    """The modules of ``mods`` the dotted names ``found`` denote (a name inside a module: that module), but ``name``."""
    out = set()
    for t in found:
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t and t != name:
            out.add(t)
    return out


def _targets(name: str, path: str, mods: dict) -> set:
    """The modules of ``mods`` that ``name`` imports at module level (its package ``__init__`` excepted)."""
    is_pkg = path.endswith("__init__.py")
    out = set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for n in _module_level_imports(tree):
        if isinstance(n, ast.Import):
            found = [a.name for a in n.names]
        else:
            base = _base(name, is_pkg, n.level, n.module or "")
            found = [base + "." + a.name if base + "." + a.name in mods else base for a in n.names]
        out |= _known(found, name, mods)
    return out


_IMPORT_RE = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*(?:\\\n[^\n]*)*)"
                        r"|import[ \t]+([^\n]*))", re.M)


def _rough_targets(name: str, path: str, mods: dict) -> set:
    """A superset of ``_targets`` read with a regular expression (every import statement, wherever it is):
    the modules outside its cycles cannot be on a cycle of the exact graph, so only the rest get parsed."""
    is_pkg = path.endswith("__init__.py")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    out = set()
    for mo in _IMPORT_RE.finditer(src):
        if mo.group(3) is not None:
            found = [x.split(" as ")[0].strip() for x in mo.group(3).split("#")[0].split(",")]
        else:
            mod = mo.group(1)
            base = _base(name, is_pkg, len(mod) - len(mod.lstrip(".")), mod.lstrip("."))
            names = re.sub(r"#[^\n]*", "", mo.group(2))
            found = [base] + [base + "." + x for x in re.split(r"[\s,()\\]+", names) if x and x != "as"]
        out |= _known(found, name, mods)
    return out


def import_graph(only=None) -> dict[str, set]:
    """Module -> the non-``__init__`` modules it imports at module level (for the modules of ``only``, when
    given, and the edges among them)."""
    mods = _modules()
    names = mods if only is None else only
    return {m: {t for t in _targets(m, mods[m], mods) if not mods[t].endswith("__init__.py") and t in names}
            for m in names}


def _candidates() -> set:
    """The modules on a cycle of the rough (superset) graph: every module of a cycle of the exact graph is one."""
    mods = _modules()
    rough = {m: {t for t in _rough_targets(m, p, mods) if not mods[t].endswith("__init__.py")}
             for m, p in mods.items()}
    return set().union(*_components(rough))


def _components(graph: dict[str, set]) -> list[set]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    comps = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(set(comp))
    return comps


def cycles(graph: dict[str, set]) -> list[list[str]]:
    """One concrete cycle (a path that comes back to its start) per strongly connected component."""
    out = []
    for comp in _components(graph):  # shortest cycle through the component's first module (breadth-first)
        start = min(comp)
        prev = {start: None}
        queue = [start]
        end = None
        while queue and end is None:
            v = queue.pop(0)
            for w in sorted(graph[v] & comp):
                if w == start:
                    end = v
                    break
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        path = [start]
        v = end
        while v is not None and v != start:
            path.insert(1, v)
            v = prev[v]
        out.append(path + [start])
    return out


def test_no_import_cycle():
    graph = import_graph(_candidates())
    found = cycles(graph)
    assert not found, "module-level import cycles (move the shared helper below both modules, or bind the " \
        "name late / at call time), one per group of modules:\n" + "\n".join(
            " -> ".join(c) + f"   (the group: {sorted(comp)})" for c, comp in zip(found, _components(graph)))


def test_rough_graph_is_a_superset():
    mods = _modules()
    for m in ("coretorch.ops.pointwise", "coretorch.ops.special", "coretorch.optim.lr_scheduler", "coretorch"):
        assert _targets(m, mods[m], mods) <= _rough_targets(m, mods[m], mods), m


def test_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_type_checking_and_function_imports_do_not_count():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "def f():\n    import c\ntry:\n    import d\nexcept ImportError:\n    import e\n"
                     "class K:\n    import g\n")
    names = sorted(a.name for n in _module_level_imports(tree) if isinstance(n, ast.Import) for a in n.names)
    assert names == ["b", "d", "e", "g"]


_IMPORT_EACH = r"""
import importlib, sys
import coretorch
bad = []
for name in sys.argv[1:]:
    try:
        m = importlib.import_module(name)
    except Exception as e:  # report every module that fails, not only the first
        bad.append(f"{name}: {type(e).__name__}: {e}")
        continue
    for k in getattr(m, "_LATE", ()):  # the names an importing module binds late must be bound
        if k not in vars(m):
            bad.append(f"{name}: late-bound name {k!r} was never bound")
print("\n".join(bad))
sys.exit(1 if bad else 0)
"""


def test_every_module_imports_after_coretorch():
    skip = {"coretorch.__main__"}  # runs the command line
    names = sorted(m for m, p in _modules().items()
                   if m.startswith("coretorch.") and not p.endswith("__init__.py") and m not in skip)
    r = subprocess.run([sys.executable, "-c", _IMPORT_EACH, *names], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
