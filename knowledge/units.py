"""Units. Everything inside the project is bytes, seconds, FLOP and bytes/s; convert only at the edge."""

GiB = 2**30  # bytes; what torch.cuda.max_memory_allocated() reports divided by this
GB = 1e9  # bytes; datasheets and the published tables use decimal gigabytes
TFLOP = 1e12  # floating-point operations
GBps = 1e9  # bytes per second (datasheet bandwidths are decimal)
ms = 1e-3  # seconds
us = 1e-6  # seconds


def to_gib(n_bytes: float) -> float:
    return n_bytes / GiB


def gb_to_gib(gb: float) -> float:
    return gb * GB / GiB
