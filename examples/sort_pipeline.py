"""A sort / unique / searchsorted data pipeline written as a PyTorch user would, run with coretorch.

An event log (user id, timestamp, amount) is ordered by time, users are counted and totalled, events are bucketed
into hours, the top spenders and per-hour medians / quantiles are picked, and a running record is tracked.  Every
figure is checked against numpy.

    python examples/sort_pipeline.py [--device cpu|opencl] [--events 20000]
"""
from __future__ import annotations

import argparse

import numpy as np

import coretorch as torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--events", type=int, default=20_000)
    args = ap.parse_args()
    dev = torch.device(args.device)
    rng = np.random.default_rng(0)
    n = args.events
    users_np = rng.zipf(1.6, n) % 500                     # a few heavy users, a long tail
    times_np = rng.uniform(0, 24, n).astype(np.float32)    # hours of a day
    amount_np = rng.lognormal(2.0, 0.7, n).astype(np.float32)
    users, times, amount = (torch.tensor(a, device=dev) for a in (users_np, times_np, amount_np))

    # 1. order the log by time (stable: equal timestamps keep their log order)
    order = torch.argsort(times, stable=True)
    times_s, users_s, amount_s = times[order], users[order], amount[order]
    assert np.array_equal(order.cpu().numpy(), np.argsort(times_np, kind="stable"))

    # 2. distinct users, how often each appears, and each event's user slot
    uniq, inverse, counts = torch.unique(users_s, return_inverse=True, return_counts=True)
    u_np, c_np = np.unique(users_np, return_counts=True)
    assert np.array_equal(uniq.cpu().numpy(), u_np) and np.array_equal(counts.cpu().numpy(), c_np)
    assert bool((uniq[inverse] == users_s).all())

    # 3. total spent per user slot, and the five biggest spenders
    totals = torch.bincount(inverse, weights=amount_s)
    top = torch.topk(totals, 5)
    tot_np = np.bincount(np.searchsorted(u_np, users_np), weights=amount_np.astype(np.float64))
    np.testing.assert_allclose(top.values.cpu().numpy(), np.sort(tot_np)[::-1][:5], rtol=1e-5)
    top_users = uniq[top.indices]

    # 4. hourly buckets: which hour each event falls in, events per hour, median and 90th percentile amount per hour
    edges = torch.arange(1, 24, dtype=torch.float32, device=dev)
    hour = torch.bucketize(times_s, edges, right=True)
    per_hour = torch.bincount(hour, minlength=24)
    assert np.array_equal(per_hour.cpu().numpy(), np.bincount(np.floor(times_np).astype(np.int64), minlength=24))
    starts = torch.searchsorted(hour, torch.arange(24, device=dev))           # hour is sorted: each hour's slice
    ends = torch.searchsorted(hour, torch.arange(24, device=dev), right=True)
    s_np, e_np = starts.cpu().numpy(), ends.cpu().numpy()
    a_sorted_np = amount_np[np.argsort(times_np, kind="stable")]
    medians, p90 = [], []
    for h in range(24):
        chunk = amount_s[int(s_np[h]):int(e_np[h])]
        medians.append(chunk.median().item())
        p90.append(torch.quantile(chunk, 0.9).item())
        ref = np.sort(a_sorted_np[s_np[h]:e_np[h]])
        assert medians[-1] == ref[(len(ref) - 1) // 2]
        np.testing.assert_allclose(p90[-1], np.quantile(ref, 0.9), rtol=1e-5)

    # 5. the running record purchase over the day and when it was set; a histogram of amounts
    record, when = torch.cummax(amount_s, 0)
    np.testing.assert_array_equal(record.cpu().numpy(), np.maximum.accumulate(a_sorted_np))
    new_records = torch.unique_consecutive(when).numel()
    hist = torch.histc(torch.log(amount), bins=10)
    assert int(hist.sum().item()) == n

    print(f"{n} events on {dev}: {uniq.numel()} users; top spenders {top_users.tolist()}")
    print(f"busiest hour {int(torch.argmax(per_hour).item())}; median amount by hour "
          f"{min(medians):.2f}..{max(medians):.2f}; 90th percentile up to {max(p90):.2f}")
    print(f"the record purchase changed {new_records} times; log-amount histogram {hist.to(torch.int64).tolist()}")
    print("pipeline ok")


if __name__ == "__main__":
    main()
