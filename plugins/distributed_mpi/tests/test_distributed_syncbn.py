"""nn.SyncBatchNorm under `mpiexec -n 2` (scripts/syncbn_worker.py): two ranks with halves of a global batch give
the outputs, input gradients and running statistics of one BatchNorm over the whole batch, on every device."""
from __future__ import annotations

import pytest
from test_distributed_mpi import DEVICES, assert_checks, mpiexec, run_mpi  # noqa: F401  (mpiexec: a fixture)


@pytest.fixture(scope="session")  # one mpiexec run, on one worker (see test_distributed_mpi.py)
def syncbn_results(mpiexec, tmp_path_factory):  # noqa: F811
    return run_mpi(mpiexec, "syncbn_worker.py", tmp_path_factory.mktemp("syncbn"))


@pytest.mark.xdist_group("mpi-syncbn")
@pytest.mark.parametrize("device", DEVICES)
def test_syncbn_two_ranks_equal_global_batchnorm(syncbn_results, device):
    assert_checks(syncbn_results, contains=f"[{device}] syncbn step", at_least=10)   # 2 steps x 5 checks
    assert_checks(syncbn_results, contains=f"[{device}] syncbn eval uses running statistics")
    assert_checks(syncbn_results, contains=f"[{device}] syncbn")
