"""nn.factory_kwargs: the ``device`` / ``dtype`` / ``memory_format`` keywords of a module's constructor, checked
and gathered for the tensor factories (PyTorch's torch.nn.factory_kwargs)."""
from __future__ import annotations

_SIMPLE = ("device", "dtype", "memory_format")


def factory_kwargs(kwargs: dict | None) -> dict:
    """``kwargs``' factory keywords as one dict (``factory_kwargs={...}`` inside it merged in); TypeError for any
    other key or a key given twice."""
    if kwargs is None:
        return {}
    expected = set(_SIMPLE) | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in _SIMPLE:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
