"""``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``: ``allreduce_hook`` (DDP's own behaviour: the
bucket divided by the world size, then all-reduced) and ``fp16_compress_hook`` (the same in float16)."""
from __future__ import annotations

import coretorch

__all__ = ["allreduce_hook", "fp16_compress_hook"]


def _size(process_group) -> int:
    from ... import api
    return api.get_world_size(process_group)


def allreduce_hook(process_group, bucket):
    """Average the bucket over the group: divide by its size, all-reduce (SUM) asynchronously."""
    from ... import api
    tensor = bucket.buffer()
    tensor.div_(_size(process_group))
    work = api.all_reduce(tensor, group=process_group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def fp16_compress_hook(process_group, bucket):
    """``allreduce_hook`` on a float16 copy of the bucket (half the bytes); the result is cast back."""
    from ... import api
    buffer = bucket.buffer()
    compressed = buffer.to(coretorch.float16).div_(_size(process_group))
    work = api.all_reduce(compressed, group=process_group, async_op=True)

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return work.get_future().then(decompress)
