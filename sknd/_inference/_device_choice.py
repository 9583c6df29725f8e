"""Which device a fit trains on and a fitted model predicts on.

:func:`resolve_device` turns the estimators' ``device`` parameter (``"auto"``, ``"cpu"``,
``"cuda:1"``, a ``torch.device``...) into the device a fit trains on, with a
``ValueError`` saying what to change when PyTorch cannot use it;
:func:`inference_device` falls back to the CPU for a model unpickled where its device is
missing. (Out of memory on a device is :mod:`sknd._inference._device`.)
"""

import torch

__all__ = ["inference_device", "resolve_device"]


def _available(device):
    """Whether PyTorch can use ``device`` (a ``torch.device``) on this machine."""
    if device.type == "cuda":
        return torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()
    if device.type == "mps":
        return torch.backends.mps.is_available()
    return device.type == "cpu"


def resolve_device(device):
    """The device a fit trains on, as a string: ``"auto"`` chosen, any other checked.

    ``device`` is anything ``torch.device`` accepts (``"cpu"``, ``"cuda:1"``,
    ``"mps"``, a ``torch.device``) or ``"auto"``; a ``ValueError`` says what is
    wrong with one PyTorch does not know or cannot use here.
    """
    if isinstance(device, str) and device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(
            f"device={device!r} is not a device PyTorch knows ({exc}). Use 'cpu', 'cuda', "
            "'cuda:0', 'mps', a torch.device, or 'auto' (a CUDA GPU when there is one)."
        ) from None
    if resolved.type == "meta":
        raise ValueError(
            f"device={device!r}: PyTorch's meta device holds tensor shapes without values, so "
            "a model can neither train nor predict there. Use device='cpu', 'cuda' or 'auto'."
        )
    if not _available(resolved):
        missing = {
            "cuda": f"no CUDA GPU {resolved.index or 0} is available to PyTorch (it sees "
            f"{torch.cuda.device_count()})",
            "mps": "PyTorch's Apple MPS backend is not available",
        }.get(resolved.type, f"PyTorch cannot use {resolved.type} devices here")
        raise ValueError(
            f"device={device!r} was requested but {missing}; use device='cpu' or device='auto'."
        )
    return str(resolved)


def inference_device(device):
    """The ``torch.device`` a fitted model predicts on: the CPU where ``device`` is not
    available here (a model fitted on a GPU, unpickled elsewhere)."""
    try:
        return torch.device(resolve_device(device))
    except ValueError:
        return torch.device("cpu")
