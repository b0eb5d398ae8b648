"""LeNet-style CNN training step: coretorch (nn layers, F.cross_entropy, SGD with momentum) against a hand-written
numpy im2col forward/backward/update of the same network, in the same run (and PyTorch if it happens to be
installed).  conv 1->6 5x5, ReLU, max-pool 2, conv 6->16 5x5, ReLU, max-pool 2, 256-120-84-10, batch 64, 28x28.

    python benchmarks/lenet.py
"""
from __future__ import annotations

import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import coretorch as ct
import coretorch.nn as nn
import coretorch.nn.functional as F


def _best(fn, n=20, warm=3):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def coretorch_step(x, y):
    ct.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                        nn.Linear(84, 10))
    opt = ct.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xt, yt = ct.tensor(x), ct.tensor(y)

    def step():
        opt.zero_grad()
        F.cross_entropy(net(xt), yt).backward()
        opt.step()
    return step


def numpy_step(x, y):
    """im2col through sliding_window_view + one matmul per conv; the same network, forward, backward, update."""
    rng = np.random.default_rng(0)
    shapes = [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 256), (120,), (84, 120), (84,), (10, 84), (10,)]
    ps = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    bufs = [np.zeros_like(p) for p in ps]
    n = x.shape[0]
    onehot = np.eye(10, dtype=np.float32)[y]

    def conv(a, w, b):
        o, c, k, _ = w.shape
        cols = sliding_window_view(a, (k, k), axis=(2, 3)).transpose(0, 1, 4, 5, 2, 3)
        oh, ow = cols.shape[-2:]
        cols = cols.reshape(a.shape[0], c * k * k, oh * ow)
        return (w.reshape(o, -1) @ cols).reshape(a.shape[0], o, oh, ow) + b.reshape(1, o, 1, 1), cols

    def conv_back(g, cols, w, a_shape, need_dx):
        o, c, k, _ = w.shape
        gm = g.reshape(g.shape[0], o, -1)
        gw = np.matmul(gm, cols.transpose(0, 2, 1)).sum(0).reshape(w.shape)
        gb = g.sum((0, 2, 3))
        if not need_dx:
            return None, gw, gb
        gc = (w.reshape(o, -1).T @ gm).reshape(g.shape[0], c, k, k, g.shape[2], g.shape[3])
        dx = np.zeros(a_shape, np.float32)
        for i in range(k):
            for j in range(k):
                dx[:, :, i:i + g.shape[2], j:j + g.shape[3]] += gc[:, :, i, j]
        return dx, gw, gb

    def pool(a):
        nn_, c, h, w = a.shape
        r = a.reshape(nn_, c, h // 2, 2, w // 2, 2)
        m = r.max((3, 5))
        mask = r == m[:, :, :, None, :, None]
        return m, mask

    def step():
        w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = ps
        z1, c1 = conv(x, w1, b1)
        a1 = np.maximum(z1, 0)
        p1, m1 = pool(a1)
        z2, c2 = conv(p1, w2, b2)
        a2 = np.maximum(z2, 0)
        p2, m2 = pool(a2)
        f = p2.reshape(n, -1)
        h3 = np.maximum(f @ w3.T + b3, 0)
        h4 = np.maximum(h3 @ w4.T + b4, 0)
        z = h4 @ w5.T + b5
        e = np.exp(z - z.max(1, keepdims=True))
        prob = e / e.sum(1, keepdims=True)
        gz = (prob - onehot) / n
        g5, gb5 = gz.T @ h4, gz.sum(0)
        gh4 = (gz @ w5) * (h4 > 0)
        g4, gb4 = gh4.T @ h3, gh4.sum(0)
        gh3 = (gh4 @ w4) * (h3 > 0)
        g3, gb3 = gh3.T @ f, gh3.sum(0)
        gp2 = (gh3 @ w3).reshape(p2.shape)
        ga2 = (m2 * gp2[:, :, :, None, :, None]).reshape(a2.shape) * (z2 > 0)
        gp1, g2, gb2 = conv_back(ga2, c2, w2, p1.shape, True)
        ga1 = (m1 * gp1[:, :, :, None, :, None]).reshape(a1.shape) * (z1 > 0)
        _, g1, gb1 = conv_back(ga1, c1, w1, x.shape, False)
        for p, b, g in zip(ps, bufs, (g1, gb1, g2, gb2, g3, gb3, g4, gb4, g5, gb5)):
            b *= 0.9
            b += g
            p -= 0.01 * b
    return step


def torch_step(x, y):
    import torch
    tnn = torch.nn
    net = tnn.Sequential(tnn.Conv2d(1, 6, 5), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(6, 16, 5), tnn.ReLU(),
                         tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(256, 120), tnn.ReLU(), tnn.Linear(120, 84),
                         tnn.ReLU(), tnn.Linear(84, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xt, yt = torch.tensor(x), torch.tensor(y)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xt), yt).backward()
        opt.step()
    return step


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    ours = _best(coretorch_step(x, y))
    base = _best(numpy_step(x, y))
    print(f"LeNet step, batch 64: coretorch {ours:.2f} ms, numpy im2col baseline {base:.2f} ms, "
          f"ratio {ours / base:.2f}")
    try:
        ref = _best(torch_step(x, y))
        print(f"PyTorch {ref:.2f} ms, coretorch / PyTorch {ours / ref:.2f}")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
