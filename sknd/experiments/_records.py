"""What a run records besides the scores: coefficients, notes, class counts, versions."""

import numpy as np
import pandas as pd

from ..networks import default_hidden_units


def coefficient_table(final, key):
    """The learned indices of a fitted network with an ND layer, one row per pair.

    The estimator's own ``indices_`` (``band_i, band_j, a, c, k, importance,
    known_index``: the same names and values a user reads there) after the ``key``
    columns (model, depth, fold).
    """
    table = final.indices_.copy()
    for name, value in reversed(list(key.items())):
        table.insert(0, name, value)
    table["known_index"] = table["known_index"].fillna("")
    return table


def versions():
    """Versions of the libraries a run depends on, for the report."""
    import platform

    import joblib
    import sklearn
    import torch

    versions = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scikit-learn": sklearn.__version__,
        "torch": torch.__version__,
        "joblib": joblib.__version__,
    }
    try:
        import skorch

        versions["skorch"] = skorch.__version__
    except ImportError:  # pragma: no cover
        pass
    return versions


def data_name(X, y):
    """A title for the report when the caller gave none."""
    attrs = getattr(X, "attrs", None) or {}
    if attrs.get("name"):
        return str(attrs["name"])
    n_samples, n_bands = np.shape(X)
    target = f", target {y.name!r}" if getattr(y, "name", None) is not None else ""
    return f"{n_samples} samples x {n_bands} bands{target}"


def class_counts(y, target_names):
    labels, counts = np.unique(y, return_counts=True)
    names = [str(label) for label in labels]
    if target_names is not None and np.issubdtype(labels.dtype, np.integer):
        target_names = list(target_names)
        if labels.min() >= 0 and labels.max() < len(target_names):
            names = [str(target_names[label]) for label in labels]
    return {name: int(n) for name, n in zip(names, counts)}


def screening_notes(outputs, n_pairs, hidden_units):
    """One note per network row whose ND layer kept fewer than all band pairs."""
    kept = {}
    for out in outputs:
        if out["n_pairs"]:
            kept.setdefault(out["key"]["model"], []).append(out["n_pairs"])
    notes = []
    for model, counts in kept.items():
        low, high = min(counts), max(counts)
        if high >= n_pairs:
            continue
        count = str(low) if low == high else f"{low}-{high}"
        note = f"{model}: the ND layers kept {count} of the {n_pairs} band pairs (pair screening)"
        if hidden_units is None:
            low_w, high_w = default_hidden_units(low), default_hidden_units(high)
            width = str(low_w) if low_w == high_w else f"{low_w}-{high_w}"
            note += f", so their hidden width is {width} units"
        notes.append(note + ".")
    return notes
