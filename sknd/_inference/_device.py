"""Out of memory on a GPU: an error that says which size to lower.

PyTorch's ``OutOfMemoryError`` reports bytes and allocator statistics; what a user can
change is the batch (training) or the chunk (scenes). :func:`device_memory` turns it
into a ``MemoryError`` naming that setting, chained to PyTorch's error. The operation's
own guarantees still hold: a failed fit leaves the estimator as it was
(:func:`sknd._estimators._fit_guards.restore_on_failure`), a failed scene writes no output.
"""

import contextlib

import torch

__all__ = []


@contextlib.contextmanager
def device_memory(doing, lower):
    """Re-raise a device out-of-memory error inside as a ``MemoryError``.

    ``doing`` says what ran out of memory (``"training on the GPU"``), ``lower`` what
    to lower, with its current value (``"batch_size (now 4096)"``).

    >>> with device_memory("training", "batch_size (now 32)"):
    ...     pass
    """
    try:
        yield
    except torch.cuda.OutOfMemoryError as error:
        raise MemoryError(
            f"The GPU ran out of memory {doing}: lower {lower}, free the GPU of other "
            f"work, or use device='cpu'. Nothing was changed. (PyTorch: {error})"
        ) from error
