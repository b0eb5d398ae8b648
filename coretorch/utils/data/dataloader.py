"""torch.utils.data.dataloader: DataLoader and the collate functions (the classes live in the package)."""
from . import DataLoader, default_collate, default_convert, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
