"""Docstrings and the API reference (issue 16, "Types and docs").

- Coverage (tools/doc_coverage.py): every public name of 33 namespaces has a docstring (2143 names; among them torch.*,
  Tensor, nn, nn.functional, nn.init, nn.utils, optim, lr_scheduler, autograd, utils.data, linalg, special,
  distributions, amp, plugins, testing).  A new public name without one fails here (``python
  tools/doc_coverage.py --missing`` lists them).
- The reference pages docs/api/*.md are what tools/gen_api_docs.py writes from the current names.
- ``mkdocs build --strict`` (what ``make docs`` runs) succeeds without a warning on a representative part of
  the site: the full build takes ~20 s of CPU (~1 min on two busy cores), so this builds one page with each kind
  of object the reference renders (a top-level function, a generated op, Tensor's runtime methods and
  properties, an nn.Module with its methods, an optimizer, a class written out from the runtime) and the
  plugin guide with its links; ~5 s.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import doc_coverage  # noqa: E402
import gen_api_docs  # noqa: E402


@pytest.mark.parametrize("label", list(doc_coverage.NAMESPACES))
def test_every_public_name_has_a_docstring(label):
    got = doc_coverage.names(label)
    assert got, label
    missing = [n for n, ok in got.items() if not ok]
    assert missing == [], f"public names without a docstring (write one): {missing}"


def test_coverage_counts_generated_and_bound_names():
    # the measure sees what exists only at run time: factory-made ops and Tensor's bound methods
    names = doc_coverage.all_names()
    for n in ("torch.exp", "torch.add", "Tensor.exp", "Tensor.add_", "Tensor.shape", "nn.Linear",
              "nn.Module.parameters", "nn.functional.relu", "optim.SGD.step", "autograd.grad"):
        assert n in names, n
    assert "nn.Linear.forward" not in names  # described by the class docstring


def test_api_pages_are_up_to_date():
    assert gen_api_docs.main(["--check"]) == 0, "run python tools/gen_api_docs.py"


_PAGE = """# sample

::: coretorch.ops.pointwise.add
::: coretorch.ops.pointwise.exp
::: coretorch.Tensor
    options:
      inherited_members: true
      members: [add_, exp, shape, backward]
::: coretorch.nn.Linear
::: coretorch.optim.SGD
""" + "\n".join(gen_api_docs._runtime_section("coretorch.nn.ZeroPad2d")) + "\n[plugins](plugins.md)\n"


def test_mkdocs_strict_build_of_a_representative_page(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(_PAGE)
    for page in ("plugins.md", "distributed.md"):  # the plugin guide and the page it links to
        (docs / page).write_text(open(os.path.join(ROOT, "docs", page)).read())
    config = open(os.path.join(ROOT, "mkdocs.yml")).read()
    head, _, rest = config.partition("\nnav:")
    plugins = rest[rest.index("\nplugins:"):]
    config = (head.replace("docs_dir: docs", f"docs_dir: {docs}")
              .replace("site_dir: site", f"site_dir: {tmp_path / 'site'}")
              + plugins.replace("tools/griffe_runtime_docs.py", os.path.join(ROOT, "tools", "griffe_runtime_docs.py")))
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(config)
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(cfg)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stderr, r.stderr
    html = (tmp_path / "site" / "index.html").read_text()
    # the rendered page carries the docstrings: a source one, a runtime (generated) one and a Tensor method
    for anchor in ("coretorch.ops.pointwise.add", "coretorch.ops.pointwise.exp", "coretorch.Tensor.add_",
                   "coretorch.nn.Linear", "coretorch.optim.SGD"):
        assert f'id="{anchor}"' in html, anchor
    assert "ZeroPad2d" in html
