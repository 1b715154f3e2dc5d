"""Arrays become torch tensors without a copy when torch is installed, and
stay numpy arrays otherwise (codecvisor itself needs only numpy)."""

try:
    import torch
except ImportError:  # numpy only
    torch = None


def of(array):
    return torch.from_numpy(array) if torch is not None else array


def have_torch():
    return torch is not None
