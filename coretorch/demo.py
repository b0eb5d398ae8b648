"""``coretorch demo``: train a small CNN on real handwritten digits, offline, and check the saved model.

    coretorch demo                          # cpu, defaults below; what `make demo` runs
    coretorch demo --device opencl --epochs 5 --optimizer Adam --lr 1e-3 --out runs/adam
    coretorch demo --resume                 # continue from the last complete checkpoint in --out
    coretorch demo --compile                # the training step through coretorch.compile (capture, replay)

The data are the UCI handwritten digits (1797 images of 8x8 pixels, CC BY 4.0) shipped inside the package
(``coretorch/data/digits.npz``, see ``coretorch/data/README.md``): nothing is downloaded, nothing is
synthetic.  A fixed split keeps 1347 images for training and 450 held out for the test accuracy.

Each epoch shows a progress bar (loss, accuracy, samples/s) and ends with a checkpoint
(``checkpoint.pt``: model, optimizer, epoch, history), written atomically by ``coretorch.save`` with Ctrl-C
held back until it is on disk.  Ctrl-C stops the run without writing anything half-done and says how to
resume; ``--resume`` continues from that checkpoint.  At the end the model is saved (``model.pt``), loaded
into a fresh network whose predictions must equal the trained one's, and the loss/accuracy curves are
plotted (``curves.png``, matplotlib's Agg backend).  The progress bar (tqdm) and the plot (matplotlib) come with
``pip install "coretorch[demo]"`` (what ``make demo`` installs); without them the demo prints text progress and
skips the plot, with a note saying what to install.

Testing hook: ``CORETORCH_DEMO_INTERRUPT_AFTER=N`` raises ``KeyboardInterrupt`` after N training batches of
this process, as a Ctrl-C at that point would.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import inspect
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "digits.npz"
N_TRAIN = 1347  # the rest (450) is held out
TARGET_ACCURACY = 0.97
DEFAULTS = dict(epochs=10, batch_size=32, optimizer="SGD", seed=0, out="demo_out")
SGD_DEFAULTS = dict(lr=0.05, momentum=0.9)


DEMO_EXTRA = 'pip install "coretorch[demo]"'
HELP = f"""`coretorch demo`: train a small CNN on real handwritten digits (the UCI digits, 1797 8x8 images shipped
with coretorch: nothing is downloaded), checkpoint every epoch, save the model, reload it, check that the
reloaded model predicts the same, and plot the loss and accuracy curves.

examples:
  coretorch demo                      # cpu, the defaults below (what `make demo` runs)
  coretorch demo --device opencl --epochs 5 --optimizer Adam --lr 1e-3 --out runs/adam
  coretorch demo --resume             # continue from the last complete checkpoint in --out

The progress bar (tqdm) and the plot (matplotlib) come with `{DEMO_EXTRA}`; without them the
demo prints text progress and skips the plot. Ctrl-C stops cleanly; --resume continues."""


def _optional(module: str):
    """The module, or None when it is not installed (the demo extra's packages)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


class _TextProgress:
    """tqdm's few methods the demo uses, as a line of text every ``INTERVAL`` seconds (tqdm not installed)."""

    INTERVAL = 2.0

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n = total, desc, 0
        self.last = time.perf_counter()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int) -> None:
        self.n += n

    def set_postfix_str(self, s: str, refresh: bool = True) -> None:
        """Called after each batch's update: prints the count and ``s`` when the interval has passed."""
        now = time.perf_counter()
        if now - self.last >= self.INTERVAL:
            self.last = now
            print(f"{self.desc}: {self.n}/{self.total} {s}".rstrip(), file=sys.stderr, flush=True)


class DemoError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


# ---- data and model ----------------------------------------------------------------------------------
def load_digits(path: Path = DATA):
    """((x_train, y_train), (x_test, y_test)) as numpy arrays: x float32 (N, 1, 8, 8) in [0, 1], y int64."""
    with np.load(path) as d:
        x = d["images"].astype(np.float32) / 16.0
        y = d["labels"].astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))  # a fixed split, the same as tests/test_training.py
    x, y = x[perm][:, None], y[perm]
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:], y[N_TRAIN:])


def build_model():
    """conv 1->16 3x3 (pad 1), BN, ReLU, conv 16->32 3x3 (pad 1), BN, ReLU, max-pool 2 (32x4x4),
    linear 512->64, ReLU, linear 64->10."""
    from . import nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 10))


def available_optimizers() -> list[str]:
    from . import optim
    names = {n for n in dir(optim) if isinstance(getattr(optim, n), type)
             and issubclass(getattr(optim, n), optim.Optimizer) and getattr(optim, n) is not optim.Optimizer}
    return sorted(names | set(optim.registered()))


def make_optimizer(name: str, params, lr: float | None):
    """``coretorch.optim.<name>`` (the core's or a plugin's); an unknown name lists the available ones."""
    from . import optim
    names = available_optimizers()
    if name not in names:
        close = [n for n in names if n.lower() == name.lower()] or difflib.get_close_matches(name, names, 1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise DemoError(f"unknown optimizer '{name}'{hint}; available optimizers: {', '.join(names)} "
                        "(plugins add more: see `coretorch info`)")
    cls = getattr(optim, name)
    if name == "SGD":
        return cls(params, lr=SGD_DEFAULTS["lr"] if lr is None else lr, momentum=SGD_DEFAULTS["momentum"])
    if lr is None:
        default = inspect.signature(cls.__init__).parameters.get("lr")
        lr = default.default if default is not None and isinstance(default.default, (int, float)) else 1e-3
    return cls(params, lr=lr)


def check_device(name: str):
    import coretorch
    from coretorch import _backend
    try:
        dev = coretorch.device(name)
    except Exception as e:
        raise DemoError(f"invalid device '{name}': {e}") from None
    devs = coretorch.devices()
    avail = [d["type"] for d in devs if d["available"]]
    if dev.type not in avail:
        why = [d.get("reason") for d in devs if d["type"] == dev.type and d.get("reason")]
        if not why and dev.type in _backend.HINTS:
            why = [f"no backend for it is installed; install {_backend.HINTS[dev.type]}"]
        raise DemoError(f"device '{name}' is not available here; available devices: {', '.join(avail) or 'none'} "
                        f"({why[0] if why else '`coretorch info` says why'})")
    return dev


# ---- safe saving -------------------------------------------------------------------------------------
@contextmanager
def _hold_interrupts():
    """Delay Ctrl-C (SIGINT) until the block is done, then raise it: files are never left half-written."""
    if threading.current_thread() is not threading.main_thread() or _holding:
        yield  # not the main thread, or an enclosing block already holds the signal (it raises at its end)
        return
    got = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    _holding.append(True)
    try:
        yield
    finally:
        _holding.pop()
        signal.signal(signal.SIGINT, previous)
    if got:
        raise KeyboardInterrupt


_holding: list = []


def _save(obj, path: Path) -> None:
    import coretorch
    with _hold_interrupts():
        coretorch.save(obj, path)  # atomic: temporary file, fsync, rename


def _plot(history: dict, path: Path) -> bool:
    """Plot the curves into ``path``; False (nothing written) when matplotlib is not installed."""
    matplotlib = _optional("matplotlib")
    if matplotlib is None:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = list(range(1, len(history["loss"]) + 1))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(epochs, history["loss"], marker="o", label="train loss")
    ax1.plot(epochs, history["test_loss"], marker="o", label="test loss")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("cross-entropy")
    ax1.set_yscale("log")
    ax1.legend()
    ax2.plot(epochs, [100 * a for a in history["acc"]], marker="o", label="train accuracy")
    ax2.plot(epochs, [100 * a for a in history["test_acc"]], marker="o", label="test accuracy")
    ax2.set_xlabel("epoch")
    ax2.set_ylabel("accuracy (%)")
    ax2.legend()
    fig.suptitle("coretorch demo: CNN on the UCI digits")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    with _hold_interrupts():
        try:
            fig.savefig(tmp, format="png", dpi=100)
            os.replace(tmp, path)
        finally:
            plt.close(fig)
            if tmp.exists():
                tmp.unlink()
    return True


# ---- training ----------------------------------------------------------------------------------------
def _evaluate(model, x, y, batch: int = 512):
    import coretorch
    import coretorch.nn.functional as F
    model.eval()
    logits = []
    with coretorch.no_grad():
        for i in range(0, len(y), batch):
            logits.append(model(x[i:i + batch]))
    out = coretorch.cat(logits) if len(logits) > 1 else logits[0]
    loss = F.cross_entropy(out, y).item()
    return out, loss, (out.argmax(1) == y).float().mean().item()


_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"


class _Interrupter:
    def __init__(self):
        n = os.environ.get("CORETORCH_DEMO_INTERRUPT_AFTER")
        self.left = int(n) if n else None

    def tick(self):
        if self.left is not None:
            self.left -= 1
            if self.left <= 0:
                raise KeyboardInterrupt


def _interrupted(progress: dict) -> int:
    """The one message for a Ctrl-C, whenever it comes (start-up, training, final save): what is on disk."""
    done, ckpt = progress.get("completed", 0), progress.get("checkpoint")
    where = (f"the last complete checkpoint ({ckpt}, epoch {done}) is intact; run again with --resume to continue"
             if done > 0 and ckpt is not None else "no epoch was completed, nothing was saved")
    print(f"\ninterrupted after {done} complete epoch(s): {where}", file=sys.stderr, flush=True)
    return 130


def run(args, progress: dict | None = None) -> int:
    """Run the demo; ``progress`` (updated as it goes: complete epochs, checkpoint path) says what a Ctrl-C
    leaves on disk."""
    threadpoolctl = _optional("threadpoolctl")
    progress = {} if progress is None else progress
    # the matrices are small: one BLAS thread is as fast on an idle machine and several times faster on a busy one
    with (threadpoolctl.threadpool_limits(limits=1, user_api="blas") if threadpoolctl is not None
          else contextlib.nullcontext()):
        return _run(args, progress)


def _run(args, progress: dict) -> int:
    import coretorch
    import coretorch.nn.functional as F
    from coretorch.utils.data import DataLoader, TensorDataset
    tqdm = getattr(_optional("tqdm"), "tqdm", None)
    if tqdm is None:
        print(f"note: tqdm is not installed, so progress is printed as text ({DEMO_EXTRA} adds the progress bar "
              "and the plot)", file=sys.stderr)

    dev = check_device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path, model_path, plot_path = out / "checkpoint.pt", out / "model.pt", out / "curves.png"

    coretorch.manual_seed(args.seed)
    (xtr, ytr), (xte, yte) = load_digits()
    if args.train_subset:
        xtr, ytr = xtr[:args.train_subset], ytr[:args.train_subset]
    model = build_model().to(dev)
    opt = make_optimizer(args.optimizer, model.parameters(), args.lr)
    history: dict[str, list[float]] = {"loss": [], "acc": [], "test_loss": [], "test_acc": [], "samples_per_s": []}
    start_epoch = 0
    if args.resume:
        if not ckpt_path.exists():
            raise DemoError(f"--resume: no checkpoint at {ckpt_path}; run without --resume first")
        ck = coretorch.load(ckpt_path, map_location=dev)
        if ck["optimizer_name"] != args.optimizer:
            raise DemoError(f"--resume: the checkpoint was trained with --optimizer {ck['optimizer_name']}, not "
                            f"{args.optimizer}")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        history = {k: list(v) for k, v in ck["history"].items()}
        start_epoch = ck["epoch"]
        progress.update(completed=start_epoch, checkpoint=ckpt_path)
        print(f"resuming from {ckpt_path}: {start_epoch} epoch(s) done")

    train = TensorDataset(coretorch.from_numpy(xtr), coretorch.from_numpy(ytr))
    x_test, y_test = coretorch.from_numpy(xte).to(dev), coretorch.from_numpy(yte).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    group = opt.param_groups[0]
    print(f"coretorch demo: CNN ({nparams} parameters) on the UCI digits, {len(ytr)} training / {len(yte)} test "
          f"images, device {dev}, {args.optimizer}(lr={group['lr']:g}), batch {args.batch_size}")
    interrupter = _Interrupter()
    train_step = None
    if getattr(args, "compile", False):
        if args.optimizer == "LBFGS":
            raise DemoError("--compile: LBFGS re-evaluates the model in its step (a closure); use another optimizer")

        def step(xb, yb):
            opt.zero_grad()
            output = model(xb)
            loss = F.cross_entropy(output, yb)
            loss.backward()
            opt.step()
            return loss, output
        train_step = coretorch.compile(step)  # captured on the first batch, replayed on the next ones
    t_train, cpu_train = time.perf_counter(), time.process_time()
    for epoch in range(start_epoch + 1, args.epochs + 1):
        # the shuffle depends only on (seed, epoch): a resumed run sees the batches an uninterrupted one would
        loader: DataLoader = DataLoader(train, batch_size=args.batch_size, shuffle=True,
                            generator=np.random.default_rng((args.seed, epoch)))
        model.train()
        seen = correct = 0
        total_loss = 0.0
        t0 = time.perf_counter()
        desc = f"epoch {epoch}/{args.epochs}"
        with (tqdm(total=len(train), desc=desc, leave=False, file=sys.stderr, dynamic_ncols=True, mininterval=0.2,
                   bar_format=_BAR) if tqdm is not None else _TextProgress(len(train), desc)) as bar:
            for xb, yb in loader:
                xb, yb = xb.to(dev), yb.to(dev)
                logits = []

                def closure():
                    opt.zero_grad()
                    output = model(xb)
                    loss = F.cross_entropy(output, yb)
                    loss.backward()
                    logits.append(output)
                    return loss

                if train_step is not None:
                    loss, output = train_step(xb, yb)
                    logits.append(output)
                else:
                    loss = opt.step(closure)
                n = len(yb)
                seen += n
                total_loss += loss.item() * n
                correct += int((logits[0].argmax(1) == yb).sum().item())
                bar.update(n)
                bar.set_postfix_str(f"loss {total_loss / seen:.4f}  acc {100 * correct / seen:.1f}%  "
                                    f"{seen / (time.perf_counter() - t0):.0f} samples/s", refresh=False)
                interrupter.tick()
        elapsed = time.perf_counter() - t0
        _, test_loss, test_acc = _evaluate(model, x_test, y_test)
        for k, v in (("loss", total_loss / seen), ("acc", correct / seen), ("test_loss", test_loss),
                     ("test_acc", test_acc), ("samples_per_s", seen / elapsed)):
            history[k].append(v)
        print(f"epoch {epoch:2d}/{args.epochs}  loss {total_loss / seen:.4f}  "
              f"train acc {100 * correct / seen:5.1f}%  test acc {100 * test_acc:5.1f}%  "
              f"{seen / elapsed:6.0f} samples/s  {elapsed:.1f} s", flush=True)
        with _hold_interrupts():  # the checkpoint and the count of complete epochs change together
            _save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                   "optimizer_name": args.optimizer, "epoch": epoch, "history": history, "seed": args.seed},
                  ckpt_path)
            progress.update(completed=epoch, checkpoint=ckpt_path)

    if not history["loss"]:
        raise DemoError("nothing to do: --epochs is 0")
    print(f"training time: {time.perf_counter() - t_train:.1f} s (CPU time {time.process_time() - cpu_train:.1f} s)"
          + (" (coretorch.compile: each step replayed from one capture)" if train_step is not None else ""))
    logits, test_loss, test_acc = _evaluate(model, x_test, y_test)
    print(f"held-out test accuracy: {100 * test_acc:.2f}% ({int(round(test_acc * len(yte)))}/{len(yte)} digits)")
    _save(model.state_dict(), model_path)
    reloaded = build_model().to(dev)
    reloaded.load_state_dict(coretorch.load(model_path, map_location=dev))
    logits2, _, _ = _evaluate(reloaded, x_test, y_test)
    same = bool((logits.argmax(1) == logits2.argmax(1)).all().item()) and \
        np.array_equal(logits.cpu().numpy(), logits2.cpu().numpy())
    print(f"saved {model_path}; reloaded model gives {'identical' if same else 'DIFFERENT'} predictions")
    if _plot(history, plot_path):
        print(f"loss and accuracy curves: {plot_path}")
    else:
        print(f"note: matplotlib is not installed, so the curves were not plotted ({DEMO_EXTRA} adds it)")
    if not same:
        print("error: the reloaded model's predictions differ from the trained model's", file=sys.stderr)
        return 1
    if test_acc < TARGET_ACCURACY and args.epochs >= DEFAULTS["epochs"] and not args.train_subset:
        print(f"note: below the {100 * TARGET_ACCURACY:.0f}% the default run reaches", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cpu", help="device type: cpu (default), or opencl when installed")
    p.add_argument("--epochs", type=int, default=DEFAULTS["epochs"], help="total epochs (default %(default)s)")
    p.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"], help="default %(default)s")
    p.add_argument("--lr", type=float, default=None,
                   help=f"learning rate (default: {SGD_DEFAULTS['lr']} for SGD, with momentum "
                        f"{SGD_DEFAULTS['momentum']}; the optimizer's own default otherwise)")
    p.add_argument("--optimizer", default=DEFAULTS["optimizer"],
                   help="any registered optimizer by name: SGD, or Adam, AdamW, ... from plugins (default SGD)")
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="default %(default)s")
    p.add_argument("--out", default=DEFAULTS["out"], help="output directory (default ./%(default)s)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--compile", action="store_true",
                   help="run the training step through coretorch.compile (captured once, then replayed)")
    p.add_argument("--train-subset", type=int, default=None, metavar="N",
                   help="train on the first N training images only (quick runs)")


def main(args) -> int:
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < (1 if name == "batch_size" else 0):
            print(f"coretorch demo: error: --{name.replace('_', '-')} must be positive", file=sys.stderr)
            return 2
    progress: dict = {}
    try:
        return run(args, progress)
    except DemoError as e:
        print(f"coretorch demo: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # start-up, training or the final save: the same message, no traceback
        return _interrupted(progress)
