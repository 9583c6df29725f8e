"""What a fit needs in memory, against what the machine has.

The network :func:`sknd.networks.build_network` would build, counted in Python integers
(:func:`network_size`), its batches' activations and the default recipe's convex fits,
estimated before anything is built (:func:`check_training_memory`), so that a fit too
large for the machine ends in an error naming the parameter to lower rather than in the
operating system killing the process.
"""

import os
from typing import NamedTuple

__all__ = []


def physical_memory():
    """Bytes of physical memory of this machine (16 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 16 * 2**30


class NetworkShape(NamedTuple):
    """What sets the size of the network :func:`sknd.networks.build_network` builds: its
    architecture (``"nd"``, ``"attnd"``, ``"mlp"``), bands, band pairs, outputs, depth,
    hidden width, and whether the bands pass through beside the first block."""

    architecture: str
    n_features: int
    n_pairs: int
    n_outputs: int
    depth: int
    hidden_units: int
    passthrough: bool


def network_size(shape):
    """``(parameters, activations, first width)`` of the network of ``shape`` (a
    :class:`NetworkShape`) that ``build_network`` builds.

    In Python integers, so that sizes no machine holds still compare without overflow
    (building the network, even on torch's ``"meta"`` device, overflows first).
    ``activations`` counts the values one sample keeps through a forward pass (the
    ``"signed"`` variant's gathered columns included); ``first width`` is the number of
    outputs of the first block. tests/training/test_memory.py checks the parameters against
    built networks.
    """
    architecture, n_features, n_pairs, n_outputs, depth, hidden_units, passthrough = shape
    if architecture == "mlp":
        params, width, gathered = n_features * hidden_units + hidden_units, hidden_units, 0
    else:
        params, width = 2 * n_pairs, n_pairs
        gathered = 4 * n_pairs  # "signed" gathers [b_i, b_j, r_i, r_j] per pair
        if architecture == "attnd":
            params += n_features * n_pairs + n_pairs
    if passthrough:
        width += n_features
    first_width, widths = width, gathered + width
    for _ in range(depth - 2):
        params += width * hidden_units + hidden_units
        width = hidden_units
        widths += 2 * hidden_units
    params += width * n_outputs + n_outputs
    return params, widths, first_width


def check_training_memory(shape, *, batch_size, n_samples, estimator_name, recipe_rows=0):
    """Refuse a fit whose network and batches cannot fit in this machine's memory.

    Counts the parameters of the network of ``shape`` (a :class:`NetworkShape`) that
    :func:`sknd.networks.build_network` would build (in Python integers: no overflow) and
    the float32 activations of one batch. Training keeps four copies of each parameter
    (weights, gradients, Adam's two moments) and one more for early stopping's best state;
    a backward pass keeps about three values per activation. The default recipe's convex
    fits hold about three float64 tables of their ``recipe_rows`` rows by the first block's
    outputs. An estimate above the physical memory raises a ``ValueError`` naming the
    parameter to lower, instead of letting the operating system kill the process.
    """
    params, widths, first_width = network_size(shape)
    n_features, n_pairs, depth, hidden_units = (
        shape.n_features,
        shape.n_pairs,
        shape.depth,
        shape.hidden_units,
    )
    tables = 3 * 8 * recipe_rows * first_width
    rows = min(batch_size, max(n_samples, 1))
    estimate = 4 * (5 * params + 3 * rows * (widths + n_features + shape.n_outputs)) + tables
    limit = physical_memory()
    if estimate > limit:
        largest = "hidden_units" if hidden_units >= n_pairs else "pairs"
        raise ValueError(
            f"{estimator_name} would need about {estimate / 2**30:,.3g} GiB to train a network "
            f"of {params:,} parameters (depth={depth}, hidden_units={hidden_units:,}, "
            f"{n_pairs:,} band pairs, batch_size={batch_size:,}), more than the "
            f"{limit / 2**30:,.3g} GiB of memory of this machine. Lower {largest} (or depth, "
            "batch_size), or select fewer bands or pairs (e.g. pairs='auto')."
        )
    return estimate
