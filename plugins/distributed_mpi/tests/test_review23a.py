"""Review 23a: coretorch.distributed and DistributedDataParallel against torch.distributed (gloo, PyTorch 2.13).

One `mpiexec -n 2` run of scripts/review23a_worker.py (named checks per rank, see test_distributed_mpi.py):
the exception types of the collectives' argument checks, ``Work.get_future``, ``all_to_all_single`` /
``all_to_all``, ``gather_object`` / ``scatter_object_list`` / ``all_gather_object``, and what DDP
synchronises (frozen parameters, buffers with ``broadcast_buffers=False``, reassigned buffers, and before which
forwards buffers are broadcast).  The expected values are numpy's on both ranks' inputs, or PyTorch's results on
the same script run side by side (the worker says which).  The only skip: mpiexec cannot start 2 processes.
"""
from __future__ import annotations

import pytest
from test_distributed_mpi import DEVICES, assert_checks, mpiexec, run_mpi  # noqa: F401  (mpiexec: a fixture)


@pytest.fixture(scope="session")  # one mpiexec run, on one worker (see test_distributed_mpi.py)
def review_results(mpiexec, tmp_path_factory):  # noqa: F811
    return run_mpi(mpiexec, "review23a_worker.py", tmp_path_factory.mktemp("review23a"), timeout=300)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_collective_errors_have_torch_types(review_results, device):
    """torch raises RuntimeError for AVG on integers, BAND/BOR/BXOR on floats, wrong sizes/list lengths
    (all_gather, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single) and a root outside the group
    ("invalid root rank"); ValueError for mixed dtypes, send/recv with oneself and gather/scatter lists given on
    the wrong rank.  coretorch raised ValueError for all of these, sent to itself without error, ignored a
    gather/scatter list on a non-root rank, and handed an out-of-range ``group_dst`` to MPI."""
    assert_checks(review_results, contains=f"[{device}] ", at_least=30)
    for name in ("all_reduce AVG int64: RuntimeError", "all_reduce BAND float32: RuntimeError",
                 "all_gather wrong size: RuntimeError",
                 "all_gather wrong dtype: ValueError", "broadcast src=5", "reduce group_dst=2", "send to self",
                 "recv from self", "gather list on the wrong rank", "scatter list on the wrong rank",
                 "all_to_all_single dim 0 not divisible", "reduce_scatter_tensor wrong size"):
        assert_checks(review_results, contains=f"[{device}] {name}")


@pytest.mark.xdist_group("mpi-review23a")
def test_subgroup_root_outside_group_is_valueerror(review_results):
    """torch maps a global ``src`` into a sub-group and raises ValueError ("not part of group") when it is not a
    member; coretorch's message and type now agree (a global rank outside the default group is the
    backend's RuntimeError instead)."""
    assert_checks(review_results, contains="sub-group with a global src outside it")


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_work_get_future(review_results, device):
    """torch's ``Work.get_future()`` gives a Future whose ``wait()`` returns ``[tensor]`` (the reduced tensor
    itself) and that chains with ``then``; all_gather's gives the output list, reduce's ``[tensor]``.  coretorch's
    Work had no ``get_future`` (AttributeError), and ``result()`` was empty for all_gather/reduce/scatter."""
    assert_checks(review_results, contains=f"[{device}] Work.get_future", at_least=6)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_all_to_all(review_results, device):
    """torch has ``all_to_all_single`` (equal parts or split sizes along dim 0, async) and ``all_to_all`` (pieces
    of different sizes); coretorch had neither (AttributeError).  Values as PyTorch gave them."""
    assert_checks(review_results, contains=f"[{device}] all_to_all_single", at_least=5)
    assert_checks(review_results, contains=f"[{device}] all_to_all uneven pieces", at_least=2)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_batch_isend_irecv(review_results, device):
    """torch has ``P2POp`` and ``batch_isend_irecv`` (its docs' exchange between two ranks; ValueError for an op
    other than isend/irecv or a list of something else); coretorch had neither (AttributeError)."""
    assert_checks(review_results, contains=f"[{device}] batch_isend_irecv")
    assert_checks(review_results, contains="P2POp with another op")
    assert_checks(review_results, contains="batch_isend_irecv of a non-P2POp")


@pytest.mark.xdist_group("mpi-review23a")
def test_object_collectives(review_results):
    """torch has ``gather_object`` and ``scatter_object_list`` (ValueError for an empty output list), and its
    ``all_gather_object`` fills ``object_list[i]`` for the group's ranks, leaving extra slots; coretorch lacked
    the first two and raised ValueError for a list longer than the world size.  torch's
    ``broadcast_object_list`` leaves the source's list as it is (the same objects); coretorch replaced them
    with unpickled copies (SILENT: identity lost)."""
    for name in ("gather_object", "scatter_object_list", "scatter_object_list empty output list",
                 "all_gather_object fills", "broadcast_object_list: the source keeps"):
        assert_checks(review_results, contains=name)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_construction_syncs_all_parameters(review_results, device):
    """SILENT before: torch's DDP broadcasts every parameter from rank 0 at construction, frozen ones
    (requires_grad=False) included; coretorch skipped frozen parameters, so replicas differed."""
    assert_checks(review_results, contains=f"[{device}] DDP construction broadcasts", at_least=2)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_buffer_synchronisation(review_results, device):
    """SILENT before.  torch 2.13: buffers are broadcast before a forward only when the previous forward ran
    with grad enabled outside ``no_sync`` (``require_forward_param_sync``), from the tensors the module holds
    now (a reassigned buffer included); ``broadcast_buffers=False`` (deprecated, FutureWarning) also keeps
    buffers rank-local at construction, ``forward_sync_buffers=False`` does not.  coretorch broadcast the
    buffer objects of construction time (a reassigned buffer was never synchronised again), broadcast before
    every forward outside ``no_sync`` (no_grad forwards too) and never in the first ``no_sync`` forward,
    broadcast buffers at construction even with ``broadcast_buffers=False``, and had no ``forward_sync_buffers``."""
    assert_checks(review_results, contains=f"[{device}] DDP buffers:", at_least=7)
    for name in ("reassigned", "broadcast_buffers=False keeps", "FutureWarning",
                 "forward_sync_buffers=False still broadcasts", "forward_sync_buffers=False: no broadcast"):
        assert_checks(review_results, contains=name)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_comm_hooks(review_results, device):
    """torch's ``DistributedDataParallel.register_comm_hook(state, hook)``: each bucket goes through
    ``hook(state, GradBucket)``, whose Future's value becomes the bucket (no further division);
    ``default_hooks.allreduce_hook`` gives DDP's own averages, ``fp16_compress_hook`` nearly so; a second
    registration is a RuntimeError; inside ``join()`` a rank that ran out runs the hook on zeros (so a lone
    rank's gradient is its own divided by the world size).  coretorch had no ``register_comm_hook``
    (AttributeError) and no ``ddp_comm_hooks`` module."""
    assert_checks(review_results, contains=f"[{device}] comm hook", at_least=8)
    assert_checks(review_results, contains=f"[{device}] comm hook inside join", at_least=3)


@pytest.mark.xdist_group("mpi-review23a")
def test_group_world_is_the_default_group(review_results):
    """torch's ``dist.group.WORLD`` is the default ProcessGroup after ``init_process_group`` (so
    ``dist.group.WORLD.size()`` works, as torch's own comm hooks use it) and None after
    ``destroy_process_group``, and destroying ``group.WORLD`` destroys the default group.  coretorch's was
    always None (``.size()``: AttributeError), and ``destroy_process_group(group.WORLD)`` did nothing."""
    for name in ("group.WORLD is the default group", "all_reduce on group.WORLD",
                 "destroy_process_group(group.WORLD)"):
        assert_checks(review_results, contains=name)


@pytest.mark.xdist_group("mpi-review23a")
def test_local_rank_environment(review_results):
    """Scripts written for torchrun read ``LOCAL_RANK`` / ``LOCAL_WORLD_SIZE`` (or ``get_node_local_rank()``);
    coretorch's ``init_process_group`` set only RANK and WORLD_SIZE and had no ``get_node_local_rank``."""
    assert_checks(review_results, contains="LOCAL_RANK")


@pytest.mark.xdist_group("mpi-review23a")
def test_ddp_cpu_module_rejects_device_ids(review_results):
    """torch: ``device_ids``/``output_device`` only work with accelerator modules; a cpu module given them is a
    ValueError (and its ``device_ids`` is None).  coretorch accepted and stored them."""
    assert_checks(review_results, contains="DDP of a cpu module", at_least=2)


@pytest.mark.xdist_group("mpi-review23a")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_buffer_sync_keeps_versions(review_results, device):
    """torch broadcasts buffers before a forward under ``_unsafe_preserve_version_counter``: the backward of
    an earlier forward that saved a buffer still works after a later (e.g. no_grad) forward.  coretorch bumped
    the version, so that backward raised the in-place modification error."""
    assert_checks(review_results, contains=f"[{device}] DDP buffer sync keeps version counters")


@pytest.mark.xdist_group("mpi-review23a")
def test_monitored_barrier(review_results):
    """torch (gloo) has ``monitored_barrier(group, timeout, wait_all_ranks)``, a float timeout converted with a
    warning; coretorch had none (AttributeError)."""
    assert_checks(review_results, contains="monitored_barrier")


@pytest.mark.xdist_group("mpi-review23a")
def test_every_check_passed(review_results):
    """Every check of the run passed on both ranks, a part of the worker that raised (``... (raised)``) included."""
    assert_checks(review_results, at_least=80)
