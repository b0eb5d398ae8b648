"""`coretorch info`: kernels a device runs on the host are marked, and the public ops are listed by family."""
from __future__ import annotations

import coretorch
from coretorch import _backend, cli
from coretorch.testing import cpu_kernels_as


def test_host_kernels_are_marked_per_device():
    with cpu_kernels_as("hostdev") as dev:
        _backend.backends()[dev].host_kernels = frozenset({"exp", "no_such_kernel"})
        _backend._tables.clear()
        d = cli.info_dict()
        assert d["host_kernels"][dev] == ["exp"]       # only kernels the device has
        assert d["host_kernels"]["cpu"] == []
        text = cli.info()
        row = next(line for line in text.splitlines() if line.split()[:1] == ["exp"])
        assert row.split()[1:][list(d["coverage"]).index(dev)] == "host"
    _backend._tables.clear()


def test_public_ops_are_listed_by_family():
    d = cli.info_dict()
    fams = d["public_ops"]
    assert set(fams) == {m.__name__.rsplit(".", 1)[1] for m in coretorch.ops.FAMILIES}
    for fam, names in fams.items():
        mod = getattr(coretorch.ops, fam)
        assert set(names) == set(mod.__all__) | set(mod.METHODS)
        for n in mod.__all__:
            assert getattr(coretorch, n) is not None
