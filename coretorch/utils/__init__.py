"""coretorch.utils: helpers shared by the nn package (hook handles, module backward hooks)."""
from __future__ import annotations

from . import hooks  # noqa: F401
from . import data  # noqa: F401  (torch.utils.data: Dataset, TensorDataset, DataLoader)
from . import checkpoint  # noqa: F401,E402  (torch.utils.checkpoint, reachable after import torch as in PyTorch)
