"""``coretorch new-plugin --kind optimizer|function|backend NAME [DIR]``: write a plugin package to start from.

The package has a pyproject with the ``coretorch`` entry point and the core versions it works with
(``coretorch>=X.Y.Z,<X.Y+1``), the plugin module, a README, ``py.typed`` and tests that run coretorch's
conformance checks for that kind (:mod:`coretorch.testing_conformance`).  It works as generated: ``pip install -e
DIR && pytest DIR/tests`` passes, and you replace the template's formulas with yours.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import string
import sys

from .. import __version__
from . import templates
from .hookspecs import PLUGIN_API_VERSION

KINDS = ("optimizer", "function", "backend")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")


class ScaffoldError(ValueError):
    """NAME or DIR cannot be used (the message says why)."""


def requirement(version: str = __version__) -> str:
    """``coretorch>=X.Y.Z,<X.Y+1``: this release and later ones of the same minor series (the plugin API's)."""
    major, minor = (int(x) for x in re.findall(r"\d+", version)[:2])
    return f"coretorch>={version},<{major}.{minor + 1}"


def names(kind: str, name: str) -> dict[str, str]:
    """The substitutions for ``name``: ``name`` (snake case: op name, device type, entry point), ``Class``,
    ``package`` (coretorch_<name>) and ``dist`` (coretorch-<name>, which owns device type <name>)."""
    if kind not in KINDS:
        raise ScaffoldError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if not _NAME.match(name):
        raise ScaffoldError(f"NAME must start with a letter and hold letters, digits, '_' or '-', got {name!r}")
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("-", "_").lower() if kind != "optimizer" \
        else name.replace("-", "_").lower()
    cls = "".join(p[:1].upper() + p[1:] for p in re.split(r"[-_]", name) if p)
    return {"name": snake, "Class": cls, "package": f"coretorch_{snake}",
            "dist": "coretorch-" + snake.replace("_", "-"), "kind": kind, "api": str(PLUGIN_API_VERSION)}


def _check_free(kind: str, n: dict[str, str]) -> None:
    """Refuse a name coretorch itself (or an installed plugin) already has: registration would refuse it later."""
    import coretorch
    if kind == "optimizer" and hasattr(coretorch.optim, n["Class"]):
        raise ScaffoldError(f"coretorch.optim.{n['Class']} already exists; choose another NAME")
    if kind == "function":
        for where, obj in (("coretorch.ops", coretorch.ops), ("Tensor", coretorch.Tensor),
                           ("nn.functional", coretorch.nn.functional)):
            if hasattr(obj, n["name"]):
                raise ScaffoldError(f"{where}.{n['name']} already exists; choose another NAME")
    if kind == "backend" and coretorch.plugins.get_backend(n["name"]) is not None:
        raise ScaffoldError(f"device type '{n['name']}' is already provided by an installed backend; choose another "
                            "NAME")


def files(kind: str, name: str) -> dict[str, str]:
    """Relative path -> text of every file of the package (nothing written)."""
    n = names(kind, name)
    deps = [requirement()] + (["numpy>=1.26"] if kind != "optimizer" else [])
    n["dependencies"] = ", ".join(f'"{d}"' for d in deps)
    spec = {
        "optimizer": dict(module="optimizer", imported=n["Class"], hook="coretorch_register_optimizers",
                          register_call=f'register("{n["Class"]}", {n["Class"]})',
                          description=f"The {n['Class']} optimizer for coretorch",
                          usage=f"    opt = coretorch.optim.{n['Class']}(model.parameters(), lr=1e-2)",
                          body=templates.OPTIMIZER, test=templates.OPTIMIZER_TEST),
        "function": dict(module="function", imported=n["name"], hook="coretorch_register_functions",
                         register_call=f'register("{n["name"]}", {n["name"]}, tensor_method=True, '
                                       f'kernels={{"cpu": kernels.{n["name"]}_cpu}})',
                         description=f"The differentiable op {n['name']} for coretorch, with a kernel per device",
                         usage=f"    y = coretorch.ops.{n['name']}(x)  # or x.{n['name']}()",
                         body=templates.FUNCTION, test=templates.FUNCTION_TEST),
        "backend": dict(module="backend", imported=f"{n['Class']}Backend", hook="coretorch_register_backends",
                        register_call=f"register({n['Class']}Backend())",
                        description=f"The coretorch device type '{n['name']}'",
                        usage=f'    x = coretorch.ones(3, device="{n["name"]}")',
                        body=templates.BACKEND, test=templates.BACKEND_TEST),
    }[kind]
    n.update({k: v for k, v in spec.items() if k not in ("body", "test")})

    def render(text: str) -> str:
        return string.Template(text).substitute(n)

    pkg = n["package"]
    out = {"pyproject.toml": render(templates.PYPROJECT), "README.md": render(templates.README),
           f"{pkg}/__init__.py": render(templates.INIT), f"{pkg}/plugin.py": render(templates.PLUGIN),
           f"{pkg}/{n['module']}.py": render(spec["body"]), f"{pkg}/py.typed": "",
           f"tests/test_{n['name']}.py": render(spec["test"])}
    if kind == "function":
        out[f"{pkg}/plugin.py"] = out[f"{pkg}/plugin.py"].replace(
            f"from .function import {n['name']}\n", f"from . import kernels\nfrom .function import {n['name']}\n")
        out[f"{pkg}/kernels.py"] = render(templates.KERNELS)
    return out


def scaffold(kind: str, name: str, directory: str | pathlib.Path | None = None) -> pathlib.Path:
    """Write the package for a ``kind`` plugin called ``name`` into ``directory`` (default: ./coretorch-<name>),
    which must not exist or be empty.  Returns the directory."""
    n = names(kind, name)
    _check_free(kind, n)
    root = pathlib.Path(directory) if directory is not None else pathlib.Path.cwd() / n["dist"]
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} exists and is not an empty directory")
    for rel, text in files(kind, name).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def add_parser(sub) -> None:
    """The ``new-plugin`` subcommand of the ``coretorch`` command line."""
    p = sub.add_parser("new-plugin", help="write a plugin package to start from (optimizer, function or backend)",
                       description=__doc__.split("\n\n")[0].replace("`", ""))  # plain text, as the demo's
    p.add_argument("--kind", required=True, choices=KINDS, help="what the plugin provides")
    p.add_argument("name", metavar="NAME", help="optimizer class, op name or device type (e.g. Lookahead, "
                   "squareplus, mydev); the distribution is coretorch-<name>")
    p.add_argument("directory", metavar="DIR", nargs="?", help="where to write it (default: ./coretorch-<name>)")


def main(args: argparse.Namespace) -> int:
    try:
        root = scaffold(args.kind, args.name, args.directory)
    except ScaffoldError as e:
        print(f"coretorch new-plugin: {e}", file=sys.stderr)
        return 2
    print(f"wrote the {args.kind} plugin {args.name!r} to {root}:")
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        print(f"  {path.relative_to(root)}")
    print(f"next: pip install -e {root} && python -m pytest {root / 'tests'}")
    return 0
