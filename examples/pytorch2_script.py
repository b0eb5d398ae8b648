"""A PyTorch 2.x training script as people write it today, run unchanged with `import coretorch as torch`.

Its first lines are the ones that used to stop a script: device selection through torch.accelerator / torch.cuda,
seeding every generator, cuDNN and TF32 flags, matmul precision, thread count, torch.compile; then a DataLoader
over the packaged UCI digits, a training loop with `.to(device, non_blocking=True)`, evaluation under
`torch.inference_mode()`, and a weights-only checkpoint round trip.

    python examples/pytorch2_script.py [--device cpu|opencl] [--epochs N]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import random
import tempfile

import numpy as np

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.utils.data import DataLoader, TensorDataset
from coretorch.utils.data.dataloader import default_collate


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    os.environ["PYTHONHASHSEED"] = str(seed)


class MLP(nn.Module):
    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.GELU(), nn.Dropout(0.1),
                                 nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--epochs", type=int, default=8)
    args = ap.parse_args()

    # ---- the first lines of a 2.x script ----
    if args.device is None:
        device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
        device = torch.device("cuda" if torch.cuda.is_available() else device)
    else:
        device = torch.device(args.device)
    set_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    torch.set_printoptions(precision=3, sci_mode=False)
    use_amp = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    print(f"device {device}, amp {use_amp}, cudnn {torch.backends.cudnn.is_available()}")

    # ---- data ----
    data = np.load(pathlib.Path(torch.__file__).parent / "data" / "digits.npz")
    x = torch.tensor(data["images"], dtype=torch.float32) / 16.0
    y = torch.tensor(data["labels"], dtype=torch.int64)
    n_train = 1400
    train = TensorDataset(x[:n_train], y[:n_train])
    test = TensorDataset(x[n_train:], y[n_train:])
    loader = DataLoader(train, batch_size=64, shuffle=True, pin_memory=torch.cuda.is_available(), num_workers=0,
                        collate_fn=default_collate)

    # ---- model ----
    model = MLP().to(device)
    model = torch.compile(model)  # forward and backward replayed from a recorded capture (coretorch.compile)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
        if epoch == 0:
            print(f"loss.grad_fn {type(loss.grad_fn).__name__}")
        print(f"epoch {epoch} loss {total / n_train:.4f}")

    # ---- evaluation and a weights-only checkpoint ----
    model.eval()
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled()
        logits = model(test.tensors[0].to(device))
        acc = (logits.argmax(1).cpu() == test.tensors[1]).float().mean().item()
        print(f"probabilities of the first test image {logits[0].softmax(-1).cpu()}")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mlp.pt")
        torch.save(model._orig_mod.state_dict(), path)  # a compiled module's own keys carry '_orig_mod.'
        with torch.serialization.safe_globals([MLP]):
            state = torch.load(path, map_location="cpu", weights_only=True)
        clone = MLP()
        clone.load_state_dict(state)
        clone.eval()
        with torch.no_grad():
            diff = clone(test.tensors[0][:8]) - model(test.tensors[0][:8].to(device)).cpu()
            same = diff.abs().max().item() < 1e-5
    print(f"checkpoint round trip {same}")
    print(f"held-out accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
