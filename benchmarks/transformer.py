"""Transformer, LSTM and GRU training steps, coretorch against PyTorch (when installed), each framework in its own
process (a process that has run PyTorch ops slows numpy's BLAS about 4x on 2 cores), with one thread and with the
default threads.

    python benchmarks/transformer.py                 # table of ms/step and ratios
    python benchmarks/transformer.py --worker coretorch gpt cpu      # one measurement (used by the table)
    python benchmarks/transformer.py --models gpt,lstm --threads 1 --repeat 5 \
        --torch-python /path/to/torchvenv/bin/python                  # PyTorch from its own venv, 5 rounds

GPT step: 2 pre-LN blocks, width 128, 4 heads, batch 16 x 64 tokens, vocabulary 65, AdamW (the shape issue 14
names).  LSTM step: a 2-layer LSTM tagger, hidden 128, batch 32 x 50 tokens, Adam; GRU step: the same tagger
with nn.GRU.  ResNet step: 7x7 stem
(stride 2), 3x3 max-pool, three basic blocks 64-128-256 with batch norm and 1x1 shortcuts, batch 16 of 1x56x56,
10 classes, SGD with momentum.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

STEPS = {"gpt": 12, "lstm": 10, "gru": 10, "resnet": 8}


def gpt_model(torch, device):
    """The GPT-style benchmark model (2 pre-LN blocks, 128 wide, 4 heads), its AdamW and a batch of 16 x 64 tokens
    (also used by benchmarks/compile.py)."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d=128, h=4):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self, vocab=65, d=128, t=64):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(t, d)
            self.blocks = nn.Sequential(Block(d), Block(d))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
            return self.head(self.ln(self.blocks(x)))

    torch.manual_seed(0)
    model = GPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x = torch.randint(0, 65, (16, 64)).to(device)
    y = torch.randint(0, 65, (16, 64)).to(device)
    return model, opt, x, y


def _gpt(torch, device):
    F = torch.nn.functional
    model, opt, x, y = gpt_model(torch, device)

    def step():
        loss = F.cross_entropy(model(x).view(-1, 65), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _lstm(torch, device, cell="LSTM"):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    emb, lstm, head = nn.Embedding(100, 64).to(device), getattr(nn, cell)(64, 128, 2, batch_first=True).to(device), \
        nn.Linear(128, 10).to(device)
    params = list(emb.parameters()) + list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    x = torch.randint(0, 100, (32, 50)).to(device)
    y = torch.randint(0, 10, (32, 50)).to(device)

    def step():
        h, _ = lstm(emb(x))
        loss = F.cross_entropy(head(h).reshape(-1, 10), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _gru(torch, device):
    return _lstm(torch, device, "GRU")


def _resnet(torch, device):
    nn, F = torch.nn, torch.nn.functional

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            return F.relu(self.b2(self.c2(y)) + self.short(x))

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.MaxPool2d(3, 2, 1), Basic(64, 64, 1), Basic(64, 128, 2), Basic(128, 256, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(16, 1, 56, 56).to(device)
    y = torch.randint(0, 10, (16,)).to(device)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def worker(framework: str, model: str, device: str) -> list:
    """[wall ms, process cpu ms]: the medians per step after two warm-up steps (printed as JSON).  The process's
    cpu time counts only while it runs: on a machine shared with other work it varies less than the wall time."""
    torch = importlib.import_module("torch" if framework == "torch" else "coretorch")
    step = {"gpt": _gpt, "lstm": _lstm, "gru": _gru, "resnet": _resnet}[model](torch, device)
    step()
    step()
    wall, cpu = [], []
    for _ in range(STEPS[model]):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return [statistics.median(wall), statistics.median(cpu)]


def _run(framework: str, model: str, device: str, threads: int | None, python: str) -> list | None:
    env = dict(os.environ)
    if threads:
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(threads)
    out = subprocess.run([python, __file__, "--worker", framework, model, device],
                         capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode:
        print(out.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _has_torch(python: str) -> bool:
    if python == sys.executable:
        return importlib.util.find_spec("torch") is not None
    return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0


def _fmt(vals: list) -> str:
    """median (min-max) of a list of ms figures."""
    med = statistics.median(vals)
    return f"{med:.1f}" if len(vals) == 1 else f"{med:.1f} ({min(vals):.0f}-{max(vals):.0f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, metavar=("FRAMEWORK", "MODEL", "DEVICE"))
    ap.add_argument("--models", default="gpt,lstm,gru,resnet")
    ap.add_argument("--devices", default="cpu,opencl")
    ap.add_argument("--threads", default="1,default", help="thread settings to run: 1, default or both")
    ap.add_argument("--repeat", type=int, default=1,
                    help="processes per figure, PyTorch's and coretorch's alternating; medians and (min-max)")
    ap.add_argument("--torch-python", default=sys.executable,
                    help="the interpreter PyTorch's figures run in (a separate venv: PyTorch is no dependency)")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    has_torch = _has_torch(args.torch_python)
    print("| step | device | threads | coretorch ms | PyTorch ms | ratio | cpu-time ratio |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for threads in [None if t == "default" else int(t) for t in args.threads.split(",")]:
            base: list = []
            ours: dict = {d: [] for d in args.devices.split(",")}
            for _ in range(args.repeat):
                if has_torch and (r := _run("torch", model, "cpu", threads, args.torch_python)):
                    base.append(r)
                for device in ours:
                    if r := _run("coretorch", model, device, threads, sys.executable):
                        ours[device].append(r)
            for device, runs in ours.items():
                bw = statistics.median(b[0] for b in base) if base else None
                bc = statistics.median(b[1] for b in base) if base else None
                ow = statistics.median(r[0] for r in runs) if runs else None
                oc = statistics.median(r[1] for r in runs) if runs else None
                ratio = f"{ow / bw:.2f}x" if ow and bw else "-"
                cratio = f"{oc / bc:.2f}x" if oc and bc else "-"
                print(f"| {model} | {device} | {threads or 'default'} | {_fmt([r[0] for r in runs]) if runs else '-'} "
                      f"| {_fmt([b[0] for b in base]) if base else '-'} | {ratio} | {cratio} |", flush=True)


if __name__ == "__main__":
    main()
