"""torch.profiler (``coretorch.profiler``): PyTorch's API on the range profiler; schedules, step ranges,
``on_trace_ready``, ``tensorboard_trace_handler`` (PyTorch 2.13's behaviour checked side by side when written)."""
from __future__ import annotations

import json
import os

import pytest

import coretorch as torch

P = torch.profiler


def test_a_scheduled_loop_records_its_active_steps_and_hands_each_trace_over(tmp_path):
    """wait=1, warmup=1, active=2, repeat=1 over 6 steps: one trace of steps 2 and 3 (PyTorch's ProfilerStep* row
    with 2 calls, the user's range twice), handed to on_trace_ready once; a tensorboard handler writes it."""
    seen = []

    def ready(prof):
        rows = {e.key: e.count for e in prof.key_averages()}
        seen.append(rows)
        P.tensorboard_trace_handler(str(tmp_path), worker_name="w")(prof)

    with P.profile(activities=[P.ProfilerActivity.CPU], schedule=P.schedule(wait=1, warmup=1, active=2, repeat=1),
                   on_trace_ready=ready) as prof:
        for _ in range(6):
            with P.record_function("work"):
                torch.ones(10) * 2
            prof.step()
    assert seen == [{"ProfilerStep*": 2, "work": 2}]
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")
    trace = json.load(open(tmp_path / files[0]))
    assert {e["name"] for e in trace["traceEvents"]} == {"ProfilerStep#2", "ProfilerStep#3", "work"}


def test_schedule_actions_and_checks():
    s = P.schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1)
    assert [s(i).name for i in range(8)] == ["NONE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "NONE",
                                             "NONE"]
    with pytest.warns(UserWarning, match="won't be using warmup"):
        P.schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError):
        P.schedule(wait=0, warmup=0, active=0)


def test_a_profiled_block_without_schedule_and_the_names():
    with P.profile() as prof:
        with P.record_function("a"):
            torch.ones(3).sum()
    assert [e.key for e in prof.key_averages()] == ["a"]
    assert "a" in prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    assert P.supported_activities() == {P.ProfilerActivity.CPU}
    assert P.record_function is torch.autograd.profiler.record_function
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        P.profile().key_averages()
