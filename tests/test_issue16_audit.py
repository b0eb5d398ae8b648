"""Issue 16 audit: gaps found while checking the issue bullet by bullet against the tree.

- The API reference's Args tables have one row per parameter: an entry naming several (``dtype, device,
  requires_grad: of the result.``) is split by tools/griffe_runtime_docs.py, and no docstring gives a type per
  name on one line (``dtype (dtype, optional), device (device, optional): ...``), which griffe rendered as one row
  whose type ran to the last ``)`` (torch.arange, nn.RNNCell/LSTMCell/GRUCell).
- Builtin names in annotations and docstring types render as the builtin: griffe resolved ``bool`` through the
  parent package (``coretorch.bool``, the dtype), so 133 parameter types of the reference read ``bool_``.
- ``plugins.get_kernel`` finds a kernel registered after the tensor was made (it read the tensor's old table).
- docs/plugins.md's optimizer and function examples ship ``py.typed`` (the backend example and new-plugin did).
- ``coretorch --help`` and its subcommands' help are plain text (no rst backticks), as ``demo --help`` was.
"""
from __future__ import annotations

import inspect
import logging
import os
import re
import sys

import griffe
import pytest

import coretorch
from coretorch import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import doc_coverage  # noqa: E402
import griffe_runtime_docs  # noqa: E402

_NAME = re.compile(r"^\*{0,2}[A-Za-z_]\w*$")


def _params(doc: str) -> list[tuple[str, str]]:
    doc = griffe_runtime_docs.split_name_lists(inspect.cleandoc(doc))
    out = []
    for section in griffe.Docstring(doc).parse("google"):
        if section.kind.value in ("parameters", "other parameters"):
            out += [(p.name, str(p.annotation or "")) for p in section.value]
    return out


def test_split_name_lists_gives_one_entry_per_name():
    doc = """What.

    Args:
        x (Tensor): the input, a tensor.
        dim (int or tuple of ints, optional): where.
        weight, bias (Tensor, optional): affine
            parameters.
        dtype (dtype, optional), device (device): of the result.

    Returns:
        a, b: not parameters.
    """
    assert _params(doc) == [("x", "Tensor"), ("dim", "int or tuple of ints"), ("weight", "Tensor"),
                            ("bias", "Tensor"), ("dtype", "dtype"), ("device", "device")]
    assert "a, b: not parameters." in griffe_runtime_docs.split_name_lists(inspect.cleandoc(doc))


def test_every_args_entry_of_the_reference_names_one_parameter():
    logging.disable(logging.CRITICAL)  # griffe's warnings about untyped entries are not the point here
    try:
        bad, seen = [], set()
        for label in doc_coverage.NAMESPACES:
            for name, doc in doc_coverage.docstrings(label).items():
                if not doc or doc in seen:
                    continue
                seen.add(doc)
                bad += [(name, p, t) for p, t in _params(doc) if not _NAME.match(p) or "(" in t or ")" in t]
    finally:
        logging.disable(logging.NOTSET)
    assert bad == []
    assert [p for p, _ in _params(coretorch.arange.__doc__)][-3:] == ["dtype", "device", "requires_grad"]


@pytest.mark.parametrize("argv", [["--help"], ["new-plugin", "--help"], ["demo", "--help"], ["info", "--help"]])
def test_command_line_help_is_plain_text(argv, capsys):
    # new-plugin's description was its module docstring's first line with an rst literal's backticks left in
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith("usage: coretorch") and "`" not in out, out
    if argv[0] == "new-plugin":
        assert "coretorch new-plugin --kind optimizer|function|backend NAME [DIR]: write a plugin package" in \
            " ".join(out.split())


def test_every_docs_example_ships_py_typed():
    # "py.typed in every package": the worked examples of docs/plugins.md, which authors copy, as the scaffold does
    for kind in ("optimizer", "function", "backend"):
        folder = os.path.join(ROOT, "docs", "examples", kind)
        toml = open(os.path.join(folder, "pyproject.toml")).read()
        package = re.search(r'packages = \["(\w+)"\]', toml)[1]
        assert f'[tool.setuptools.package-data]\n{package} = ["py.typed"]' in toml, kind
        assert os.path.isfile(os.path.join(folder, package, "py.typed")), kind


def test_get_kernel_sees_kernels_registered_after_the_tensor_was_made(device):
    # get_kernel read the kernel table the tensor was made with: a plugin registered in-process afterwards (a
    # notebook, a test) was reported as having no kernel for that device ("kernels exist for device types: cpu")
    x = coretorch.tensor([1.0, -2.0, 3.0], device=device)
    y = x[1:]  # a view made before the registration too

    class Late:
        CORETORCH_PLUGIN_API = 1

        @coretorch.plugins.hookimpl
        def coretorch_register_functions(self, register):
            register("t16_twice", lambda t: t * 2, kernels={device.split(":")[0]: lambda a: a + a})

    coretorch.plugins.register(Late(), name="t16-late")
    try:
        kernel = coretorch.plugins.get_kernel("t16_twice", x)
        out = coretorch.plugins.from_array(kernel(coretorch.plugins.to_array(x)), x)
        assert out.device == x.device and out.tolist() == [2.0, -4.0, 6.0]
        assert coretorch.plugins.get_kernel("t16_twice", y) is not None
    finally:
        coretorch.plugins.unregister("t16-late")
    with pytest.raises(ValueError, match="unknown kernel 't16_twice'"):
        coretorch.plugins.get_kernel("t16_twice", x)


def test_builtin_annotations_are_not_read_as_coretorch_dtypes(monkeypatch):
    # griffe resolved ``bool`` in coretorch.ops.creation through the parent package, where ``coretorch.bool`` is
    # the dtype: 133 ``requires_grad: bool``-like types of the reference read "bool_" and linked to the dtype
    monkeypatch.setattr(griffe.Object, "resolve", griffe.Object.resolve)  # the extension patches it: restore
    monkeypatch.setattr(griffe_runtime_docs, "_PACKAGE", "coretorch_t16")  # (the real coretorch would be found)
    source = {"__init__.py": "from .dtypes import bool_ as bool, float32\n", "dtypes.py": "bool_ = float32 = 1\n",
              "ops/__init__.py": "", "ops/creation.py": 'def arange(end, requires_grad: bool = False, dtype: float32 = '
              'None, n: int = 0):\n    """What.\n\n    Args:\n        requires_grad (bool): x.\n    """\n'}
    with griffe.temporary_visited_package("coretorch_t16", source, docstring_parser="google",
                                          extensions=griffe.load_extensions(griffe_runtime_docs.RuntimeDocstrings)
                                          ) as pkg:
        fn = pkg["ops.creation.arange"]
        assert fn.parameters["requires_grad"].annotation.canonical_path == "bool"
        assert fn.parameters["n"].annotation.canonical_path == "int"
        assert fn.parameters["dtype"].annotation.canonical_path == "coretorch_t16.dtypes.float32"  # not a builtin
        section = fn.docstring.parsed[-1]
        assert section.value[0].annotation.canonical_path == "bool"
        assert pkg["bool"].target_path == "coretorch_t16.dtypes.bool_"  # coretorch.bool stays the dtype
