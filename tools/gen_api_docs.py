"""Write docs/api/*.md: one mkdocstrings page per namespace of tools/doc_coverage.py.

Each page is a list of ``::: coretorch.<name>`` directives, one per public function or class the coverage tool
counts, so the reference documents exactly what the coverage test measures (names come and go with the code:
rerun this script; tests/test_docs.py checks the pages are up to date).

    python tools/gen_api_docs.py            # rewrite docs/api/
    python tools/gen_api_docs.py --check    # exit 1 if a page is stale
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir)
API = os.path.join(ROOT, "docs", "api")
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import doc_coverage  # noqa: E402

TITLES = {
    "torch": ("coretorch", "Top-level functions: tensor creation, math, reductions, shapes, random numbers, "
              "autograd switches and dtypes (`import coretorch as torch`)."),
    "Tensor": ("coretorch.Tensor", "The n-dimensional array with autograd. Most methods are the method form of "
               "the function of the same name in [coretorch](torch.md)."),
    "nn": ("coretorch.nn", "Layers (`nn.Module` subclasses), containers and parameters."),
    "nn.functional": ("coretorch.nn.functional", "The functional form of the layers, activations and losses."),
    "nn.init": ("coretorch.nn.init", "Parameter initialisation."),
    "nn.utils": ("coretorch.nn.utils", "Gradient clipping, parameter vectors, weight/spectral norm, packed "
                 "sequences, parametrizations."),
    "optim": ("coretorch.optim", "Optimizers."),
    "optim.lr_scheduler": ("coretorch.optim.lr_scheduler", "Learning-rate schedules."),
    "autograd": ("coretorch.autograd", "Automatic differentiation: `backward`, `grad`, custom `Function`s, "
                 "gradient checks."),
    "utils.data": ("coretorch.utils.data", "Datasets, samplers and the `DataLoader`."),
    "linalg": ("coretorch.linalg", "Linear algebra."),
    "special": ("coretorch.special", "Special functions."),
    "distributions": ("coretorch.distributions", "Probability distributions, transforms and KL divergences."),
    "amp": ("coretorch.amp", "Automatic mixed precision: `autocast` and `GradScaler`."),
    "plugins": ("coretorch.plugins", "The plugin API (see also [Writing plugins](../plugins.md))."),
    "testing": ("coretorch.testing", "`assert_close` and the backend conformance suite."),
    "sparse": ("coretorch.sparse", "Sparse COO tensors and the products that take them."),
    "distributed": ("coretorch.distributed", "Collectives, process groups and `DistributedDataParallel`, as "
                    "provided by the coretorch-distributed-mpi plugin (see [Distributed training]"
                    "(../distributed.md))."),
    "random": ("coretorch.random", "The global random number generator: seeding, state, `fork_rng`, "
               "`Generator`."),
    "accelerator": ("coretorch.accelerator", "The current accelerator (the OpenCL device when one is present)."),
    "cuda": ("coretorch.cuda", "PyTorch's CUDA namespace as on a machine without CUDA: what scripts call on "
             "their first lines answers as PyTorch does there."),
    "backends": ("coretorch.backends", "The flags scripts set (`cudnn.benchmark`, `cuda.matmul.allow_tf32`, ...): "
                 "accepted, with no effect where coretorch has no such library; `opt_einsum` is real."),
    "mps": ("coretorch.mps", "Apple's Metal namespace: coretorch has no MPS device."),
    "xpu": ("coretorch.xpu", "Intel's XPU namespace: coretorch has no XPU device."),
    "compiler": ("coretorch.compiler", "Controls of `coretorch.compile`: `disable`, `reset`, `explain`, "
                 "`is_compiling`."),
    "jit": ("coretorch.jit", "TorchScript is not part of coretorch: the entry points say what to do instead; the "
            "decorators work on eager code."),
    "onnx": ("coretorch.onnx", "ONNX export is not part of coretorch: the entry points say so."),
    "multiprocessing": ("coretorch.multiprocessing", "Python's multiprocessing with `spawn`/`start_processes` "
                        "and the sharing-strategy switches."),
    "autograd.graph": ("coretorch.autograd.graph", "The autograd graph's nodes (`grad_fn`): `Node`, its hooks, "
                       "`AccumulateGrad`."),
    "utils.checkpoint": ("coretorch.utils.checkpoint", "Activation checkpointing: the segment's activations are "
                         "freed after its forward and recomputed in the backward (the forward's random states and "
                         "autocast); results and gradients are the plain call's."),
    "func": ("coretorch.func", "Function transforms (`grad`, `vjp`, `jacrev`, `hessian`, `vmap`) and the functional "
             "module API (`functional_call`, `stack_module_state`), on reverse-mode autograd; `vmap` calls the "
             "function once per batch entry."),
    "profiler": ("coretorch.profiler", "PyTorch's profiler API (`profile` with schedules, `record_function`, "
                 "`tensorboard_trace_handler`): host ranges, no per-op events."),
    "utils.hooks": ("coretorch.utils.hooks", "Handles returned by hook registrations."),
    "return_types": ("coretorch.return_types", "The named tuples of the ops that return several tensors."),
    "serialization": ("coretorch.serialization", "`save`/`load` (safetensors files, no pickle) and the "
                      "`weights_only` allow-list functions."),
}
# the options every page's directives share (mkdocs.yml holds the global ones)
_OPTS = "    options:\n      heading_level: 2\n"


_STATIC: list = []  # [{package: griffe module}]
UNRESOLVED: list[str] = []  # names griffe cannot find in the source


def _resolvable(path: str) -> bool:
    """Whether mkdocstrings (griffe reading the source) finds ``path``; star imports with a computed
    ``__all__`` (``coretorch.nn``) hide names from it."""
    import griffe
    if not _STATIC:
        _STATIC.append({})
    package, _, rest = path.partition(".")
    if package not in _STATIC[0]:
        _STATIC[0][package] = griffe.GriffeLoader().load(package)
    try:
        obj = _STATIC[0][package][rest]
        if obj.is_alias:
            obj.final_target
        return True
    except Exception:
        return False


def _targets(label: str) -> list[str]:
    """The directives' targets of one namespace: functions and classes (a class's members come with it).  A
    name is documented at its public path where griffe resolves it, else where it is defined."""
    module = doc_coverage.NAMESPACES[label]
    names = doc_coverage.names(label)
    if label == "Tensor":
        return ["coretorch.Tensor"]
    mod = importlib.import_module(module)
    prefix = label + "."
    out = []
    for top in sorted({n[len(prefix):].split(".")[0] for n in names}):
        path = f"{module}.{top}"
        if not _resolvable(path):
            obj = getattr(mod, top)
            path = f"{obj.__module__}.{obj.__qualname__}"
            if not _resolvable(path):  # made at run time (classes from a factory): no source to read
                UNRESOLVED.append(f"{module}.{top}")
                continue
        out.append(path)
    return out


def page(label: str) -> str:
    title, intro = TITLES[label]
    lines = [f"# {title}", "", intro, ""]
    before = len(UNRESOLVED)
    for target in _targets(label):
        lines += [f"::: {target}", _OPTS + ("      inherited_members: true\n" if label == "Tensor" else "")]
    for path in UNRESOLVED[before:]:  # written out here from the imported class
        lines += _runtime_section(path)
    return "\n".join(lines).rstrip() + "\n"


def _runtime_section(path: str) -> list[str]:
    module, name = path.rsplit(".", 1)
    obj = getattr(importlib.import_module(module), name)
    try:
        sig = str(inspect.signature(obj).replace(return_annotation=inspect.Signature.empty))
    except (TypeError, ValueError):
        sig = "(...)"
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    return [f"## {name}", "", "```python", f"{name}{sig}", "```", "", inspect.cleandoc(doc or ""), ""]


def index() -> str:
    lines = ["# API reference", "", "One page per namespace; every public function, class, method and property "
             "with its docstring (`make docs` builds this site with mkdocs and mkdocstrings).", "",
             "| namespace | contents |", "|---|---|"]
    for label, (title, intro) in TITLES.items():
        lines.append(f"| [{title}]({_file(label)}) | {intro.split('. ')[0].rstrip('.')} |")
    return "\n".join(lines) + "\n"


def _file(label: str) -> str:
    return label.replace(".", "_") + ".md"


def pages() -> dict[str, str]:
    out = {"index.md": index()}
    for label in doc_coverage.NAMESPACES:
        out[_file(label)] = page(label)
    return out


def main(argv: list[str]) -> int:
    want = pages()
    if "--check" in argv:
        stale = [f for f, text in want.items()
                 if not os.path.exists(os.path.join(API, f)) or open(os.path.join(API, f)).read() != text]
        if stale:
            print("stale: " + ", ".join(stale) + " (run python tools/gen_api_docs.py)")
            return 1
        return 0
    os.makedirs(API, exist_ok=True)
    for f, text in want.items():
        with open(os.path.join(API, f), "w") as fh:
            fh.write(text)
    print(f"wrote {len(want)} pages to docs/api/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
