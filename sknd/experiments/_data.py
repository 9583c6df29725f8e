"""Resolve the ``--dataset`` argument: a shipped dataset name or a user's CSV file."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch

SHIPPED_DATASETS = ("satimage", "forest_type")
_TARGET_GUESSES = ("class", "target", "label", "y")


def _load_shipped(name):
    from ..datasets import load_forest_type, load_satimage

    loader = {"satimage": load_satimage, "forest_type": load_forest_type}[name]
    bunch = loader(as_frame=True)
    return bunch.data, np.asarray(bunch.target), list(bunch.target_names)


def _load_csv(path, target):
    frame = pd.read_csv(path)
    if target is None:
        matches = [c for c in frame.columns if str(c).strip().lower() in _TARGET_GUESSES]
        if len(matches) != 1:
            raise ValueError(
                f"{path}: pass the class column with --target (columns: {list(frame.columns)})."
            )
        target = matches[0]
    if target not in frame.columns:
        raise ValueError(f"{path}: no column {target!r}; columns: {list(frame.columns)}.")
    bands = frame.drop(columns=[target]).select_dtypes(include="number")
    dropped = [c for c in frame.columns if c != target and c not in bands.columns]
    if dropped:
        warnings.warn(f"Ignoring non-numeric columns {dropped}.", stacklevel=3)
    labels = frame[target]
    if labels.dtype == object:
        # Class letters often carry stray spaces in CSV exports ("d " vs "d").
        labels = labels.astype(str).str.strip()
    keep = bands.notna().all(axis=1) & labels.notna()
    if not keep.all():
        warnings.warn(f"Dropping {int((~keep).sum())} rows with missing values.", stacklevel=3)
    bands, labels = bands[keep].reset_index(drop=True), labels[keep].to_numpy()
    bands.columns = [str(c) for c in bands.columns]
    classes, y = np.unique(labels, return_inverse=True)
    return bands.astype(np.float64), y, [str(c) for c in classes]


def load_experiment_data(dataset, *, target=None, bands=None, max_samples=None, random_state=0):
    """Load a dataset for the experiment runner.

    Parameters
    ----------
    dataset : str or path-like
        ``"satimage"``, ``"forest_type"`` or the path of a CSV file with a header row.
    target : str, default=None
        Class column of a CSV. None looks for a single column named ``class``, ``target``,
        ``label`` or ``y`` (any case). All other numeric columns are bands.
    bands : list of str, default=None
        Keep only these band columns (e.g. the centre pixel of satimage:
        ``["p4_green", "p4_red", "p4_nir1", "p4_nir2"]``).
    max_samples : int, default=None
        Draw a stratified random subsample of this size (for quick trials).
    random_state : int, default=0
        Seeds the subsample.

    Returns
    -------
    data : Bunch
        ``X`` (DataFrame of float64 bands with string column names), ``y`` (int class
        indices), ``target_names``, ``name`` (the dataset name or the CSV file stem).
    """
    key = str(dataset)
    if key in SHIPPED_DATASETS:
        X, y, target_names = _load_shipped(key)
        name = key
    else:
        path = Path(dataset)
        if not path.is_file():
            raise ValueError(
                f"--dataset must be one of {SHIPPED_DATASETS} or an existing CSV file, got {key!r}."
            )
        X, y, target_names = _load_csv(path, target)
        name = path.stem
    if bands is not None:
        missing = [b for b in bands if b not in X.columns]
        if missing:
            raise ValueError(f"Unknown bands {missing}; available: {list(X.columns)}.")
        X = X[list(bands)]
    if X.shape[1] < 2:
        raise ValueError(f"Need at least two bands, got {list(X.columns)}.")
    if max_samples is not None and max_samples < len(y):
        keep, _ = train_test_split(
            np.arange(len(y)), train_size=max_samples, stratify=y, random_state=random_state
        )
        keep = np.sort(keep)
        X, y = X.iloc[keep].reset_index(drop=True), y[keep]
    return Bunch(X=X.reset_index(drop=True), y=y, target_names=target_names, name=name)
