"""The test suite sets the plugin switches itself: the tests that exercise CORETORCH_PLUGINS, strict mode,
autoload and fallback set them explicitly (often in subprocesses), so a developer's shell settings must not
leak into the other tests or into the subprocesses they start."""
import os
import sys

import pytest

try:
    from _pytest.nodeid import NodeId  # pytest >= 9
except ImportError:  # older pytest: pytest-xdist's own marking works
    NodeId = None

for _var in ("CORETORCH_PLUGINS", "CORETORCH_DISABLE_PLUGIN_AUTOLOAD", "CORETORCH_STRICT_PLUGINS",
             "CORETORCH_FALLBACK"):
    os.environ.pop(_var, None)

# Bytecode is cached (__pycache__, git-ignored) even where the shell sets PYTHONDONTWRITEBYTECODE: otherwise each
# xdist worker rewrites every test module's asserts and compiles coretorch's sources again, and so does each of
# the ~150 Python subprocesses the suite starts (about a second of CPU per process, a tenth of the suite's time).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


_SLOW_FIRST = ("tests/test_programs.py", "tests/test_packaging.py", "plugins/distributed_mpi/", "tests/test_startup.py",
               "tests/test_typing.py", "tests/test_examples.py", "tests/test_training.py", "tests/test_demo.py",
               "tests/test_plugin_docs.py", "tests/test_plugin_scaffold.py", "plugins/extra_ops/tests/test_plugin.py",
               "tests/test_transformer.py", "tests/test_compat_programs.py", "tests/test_docs.py")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup`` (make test) again keeps an ``xdist_group`` on one worker under pytest 9: pytest-xdist
    3.8 appends ``@group`` to ``item._nodeid``, which pytest 9's ``nodeid`` (made from ``item._id``) ignores, so
    every group was spread over the workers and each of them rebuilt the group's shared fixtures."""
    if not getattr(config.option, "loadgroup", False):
        return
    # the long tests (subprocesses: programs, builds, mpiexec, mypy) are handed out first, so that the run does not
    # end with one worker finishing a long test while the other idles (xdist hands out work in this order)
    items.sort(key=lambda item: not item.nodeid.startswith(_SLOW_FIRST))
    if NodeId is None:
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid.rpartition("]")[2]:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")
