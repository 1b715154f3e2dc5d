"""Stacking a batch in a DataLoader worker into shared memory whose pages
are made in one call.

A worker sends each batch to the training process in a new shared-memory
tensor (torch's default collate stacks into one), so every batch lands on
pages the kernel has never handed out. Faulting them in one 4 KiB page at a
time costs microseconds a page on a VM, which for a batch of clips (MBs)
costs more than the stacking copy; ``madvise(MADV_POPULATE_WRITE)`` (Linux
5.14+) makes them all in one call first. On older kernels the call fails
and the pages fault in as before.
"""

import torch

from . import _codecvisor


def populate(address: int, size: int) -> bool:
    """Makes the writable pages of [address, address + size) present, in
    one call; False where the kernel cannot (the pages then fault in when
    first written)."""
    return size <= 0 or _codecvisor.populate_pages(address, size)


def stack_shared(tensors) -> torch.Tensor:
    """``torch.stack(tensors)`` into a new shared-memory CPU tensor, as
    torch's collate makes in a worker, with its pages populated first."""
    first = tensors[0]
    storage = first.storage()._new_shared(len(tensors) * first.numel())
    out = first.new(storage).resize_(len(tensors), *first.shape)
    populate(out.data_ptr(), out.numel() * out.element_size())
    return torch.stack(tensors, 0, out=out)
