"""Resolve the ``--dataset`` argument: a shipped dataset name or a user's CSV file.

Every automatic choice (columns not used as bands, dropped rows, subsampling) becomes a
note: the command line prints each once and the report lists them.
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch
from sklearn.utils.multiclass import type_of_target

from ._splits import spatial_blocks

SHIPPED_DATASETS = ("satimage", "forest_type")
_TARGET_GUESSES = ("class", "target", "label", "y")
# Columns that identify samples or folds rather than measure reflectance.
_ID_LIKE = re.compile(
    r"^(id|fid|oid|objectid|index|sample|unnamed: ?\d+|folds?"
    r"|.*[_ ]id|id[_ ].*|folds?[_ ].*|.*[_ ]folds?)$",
    re.IGNORECASE,
)


def _load_shipped(name):
    from ..datasets import load_forest_type, load_satimage

    loader = {"satimage": load_satimage, "forest_type": load_forest_type}[name]
    bunch = loader(as_frame=True)
    return bunch.data, np.asarray(bunch.target), list(bunch.target_names)


def _shorten(names, limit=12):
    names = [str(n) for n in names]
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[: limit // 2]) + ", ..., " + ", ".join(names[-limit // 2 :])


def _column(frame, name, option, path):
    if name not in frame.columns:
        raise ValueError(
            f"{path}: {option} names no column {name!r}; columns: {list(frame.columns)}."
        )
    return frame[name]


def _load_csv(path, target, task, reserved, exclude, bands, notes):
    """The CSV's rows with a target and all band values, its bands, and the target's name."""
    frame = pd.read_csv(path)
    frame.columns = [str(c) for c in frame.columns]
    if target is None:
        target = _guess_target(frame, reserved, exclude, path, notes)
    labels = _column(frame, target, "--target", path)
    for option, names in reserved.items():
        for name in names:
            _column(frame, name, option, path)
    for name in exclude:
        _column(frame, name, "--exclude", path)
    not_bands = {target, *exclude, *(n for names in reserved.values() for n in names)}
    if bands is not None:
        candidates = _named_bands(frame, bands, not_bands, path)
    else:
        candidates = _unnamed_bands(frame, not_bands, notes)
    numeric = candidates.select_dtypes(include="number")
    dropped = [c for c in candidates.columns if c not in numeric.columns]
    if dropped:
        notes.append(f"Not used as bands: non-numeric columns {dropped}.")
    skipped = [c for c in not_bands if c != target]
    if skipped:
        notes.append(
            f"Not used as bands: {sorted(skipped)} (named as groups, coordinates or --exclude)."
        )
    labels = _checked_labels(labels, target, task)
    frame = frame.assign(**{target: labels})
    keep = numeric.notna().all(axis=1) & labels.notna()
    if not keep.all():
        notes.append(f"Dropped {int((~keep).sum())} rows with missing band or target values.")
    return frame[keep].reset_index(drop=True), numeric[keep].reset_index(drop=True), target


def _guess_target(frame, reserved, exclude, path, notes):
    """The one column named like a target that no option claims."""
    taken = {n for names in reserved.values() for n in names} | set(exclude)
    matches = [c for c in frame.columns if c.strip().lower() in _TARGET_GUESSES and c not in taken]
    if len(matches) != 1:
        raise ValueError(
            f"{path}: pass the target column with --target (columns: {list(frame.columns)})."
        )
    notes.append(f"Target column {matches[0]!r} (guessed from its name; set with --target).")
    return matches[0]


def _named_bands(frame, bands, not_bands, path):
    """The columns ``--bands`` names."""
    clash = [b for b in bands if b in not_bands]
    if clash:
        raise ValueError(f"--bands {clash} are also the target, groups or coordinates.")
    missing = [b for b in bands if b not in frame.columns]
    if missing:
        raise ValueError(f"{path}: unknown bands {missing}; columns: {list(frame.columns)}.")
    return frame[list(bands)]


def _unnamed_bands(frame, not_bands, notes):
    """Without ``--bands``: every column but the named ones and those named like ids."""
    candidates = frame.drop(columns=[c for c in frame.columns if c in not_bands])
    id_like = [c for c in candidates.columns if _ID_LIKE.match(c.strip())]
    if id_like:
        notes.append(
            f"Not used as bands: {id_like} (names of id or fold columns; choose the bands "
            "with --bands)."
        )
        candidates = candidates.drop(columns=id_like)
    return candidates


def _checked_labels(labels, target, task):
    """The target column, refused where ``task`` cannot use it."""
    if pd.api.types.is_numeric_dtype(labels) and np.isinf(labels.astype(float)).any():
        raise ValueError(
            f"Target column {target!r} has {int(np.isinf(labels.astype(float)).sum())} "
            "infinite values: drop those rows from the CSV or pick another --target."
        )
    if task == "classification":
        return _class_labels(labels, target)
    if not pd.api.types.is_numeric_dtype(labels):
        raise ValueError(
            f"--task regression needs a numeric target, but column {target!r} holds "
            f"{labels.dtype} values; pick another --target or --task classification."
        )
    if labels.isna().any():
        raise ValueError(
            f"Target column {target!r} has {int(labels.isna().sum())} missing values: "
            "drop those rows from the CSV or pick another --target."
        )
    return labels


def _class_labels(labels, target):
    if not pd.api.types.is_numeric_dtype(labels):
        # Class letters often carry stray spaces in CSV exports ("d " vs "d").
        return labels.astype(str).str.strip().where(labels.notna())
    if type_of_target(labels.dropna()) == "continuous":
        raise ValueError(
            f"Target column {target!r} is continuous ({labels.nunique()} distinct values): "
            "pass --task regression to evaluate NDRegressor, or name a class column with "
            "--target."
        )
    return labels


def load_experiment_data(
    dataset,
    *,
    target=None,
    bands=None,
    task="classification",
    groups=None,
    coords=None,
    block_size=None,
    exclude=None,
    max_samples=None,
    random_state=0,
):
    """Load a dataset for the experiment runner.

    Parameters
    ----------
    dataset : str or path-like
        ``"satimage"``, ``"forest_type"`` or the path of a CSV file with a header row.
    target : str, default=None
        Target column of a CSV. None looks for a single column named ``class``,
        ``target``, ``label`` or ``y`` (any case).
    bands : list of str, default=None
        Use only these band columns (e.g. the centre pixel of satimage:
        ``["p4_green", "p4_red", "p4_nir1", "p4_nir2"]``). None means every numeric column
        that is not the target, the groups, a coordinate, excluded, or named like an id or
        fold column (``id``, ``fid``, ``*_id``, ``fold``...).
    task : {"classification", "regression"}, default="classification"
        A continuous target with ``task="classification"`` raises a ``ValueError`` naming
        ``--task regression``; a regression target with missing values raises too.
    groups : str, default=None
        CSV column of group labels (field, plot, fold id) for grouped cross-validation.
    coords : list of two str, default=None
        CSV columns of the x and y coordinates, for ``block_size``.
    block_size : float, default=None
        Groups are square blocks of this side in coordinate units (:func:`spatial_blocks`).
    exclude : list of str, default=None
        Further CSV columns that are not bands (other targets, metadata).
    max_samples : int, default=None
        Draw a random subsample of this size (stratified for classification).
    random_state : int, default=0
        Seeds the subsample.

    Returns
    -------
    data : Bunch
        ``X`` (DataFrame of float64 bands with string column names), ``y`` (int class
        indices, or float targets), ``target_names`` (None for regression), ``name`` (the
        dataset name or the CSV file stem), ``task``, ``groups`` (ndarray or None),
        ``group_name`` (how to call the groups in messages) and ``notes`` (the automatic
        choices, one sentence each).

    Examples
    --------
    >>> from sknd.experiments import load_experiment_data
    >>> data = load_experiment_data("forest_type")
    >>> data.X.shape, data.task, data.groups is None
    ((523, 9), 'classification', True)
    """
    _check_grouping(task, groups, coords, block_size)
    _check_sizes(bands, max_samples, block_size)
    notes = []
    if str(dataset) in SHIPPED_DATASETS:
        frame, name = None, str(dataset)
        X, y, target_names = _shipped(name, task, groups, coords, bands)
    else:
        frame, X, y, target_names, name = _csv(
            dataset, target, task, groups, coords, exclude, bands, notes
        )
    if groups is not None:
        group_values, group_name = _group_column(frame, groups)
    elif block_size is not None:
        group_values, group_name = _blocks(frame, coords, block_size, notes)
    else:
        group_values, group_name = None, None
    if X.shape[1] < 2:
        raise ValueError(f"Need at least two bands, got {list(X.columns)}.")
    if max_samples is not None and max_samples < len(y):
        keep = _subsample(y, max_samples, task, random_state, notes)
        X, y = X.iloc[keep].reset_index(drop=True), y[keep]
        group_values = None if group_values is None else group_values[keep]
    notes.append(f"{X.shape[1]} bands: {_shorten(X.columns)}.")
    return Bunch(
        X=X.reset_index(drop=True).astype(np.float64),
        y=y,
        target_names=target_names,
        name=name,
        task=task,
        groups=group_values,
        group_name=group_name,
        notes=notes,
    )


def _check_grouping(task, groups, coords, block_size):
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}.")
    if groups is not None and block_size is not None:
        raise ValueError("Pass --groups or --spatial-blocks, not both.")
    if block_size is not None and coords is None:
        raise ValueError("--spatial-blocks needs the coordinate columns: --coords X_COL,Y_COL.")
    if coords is not None and len(coords) != 2:
        raise ValueError(f"--coords takes two columns (x and y), got {list(coords)}.")
    if coords is not None and coords[0] == coords[1]:
        raise ValueError(
            f"--coords names the column {coords[0]!r} twice: give the x and the y column."
        )


def _check_sizes(bands, max_samples, block_size):
    if bands is not None:
        repeated = sorted({band for band in bands if list(bands).count(band) > 1})
        if repeated:
            raise ValueError(f"--bands names {repeated} more than once: give each band once.")
    if max_samples is not None and max_samples < 2:
        raise ValueError(f"--max-samples must be at least 2 rows, got {max_samples}.")
    if block_size is not None and not block_size > 0:
        raise ValueError(f"--spatial-blocks must be a positive block size, got {block_size}.")


def _shipped(name, task, groups, coords, bands):
    """A shipped dataset's bands (all, or those of ``bands``), classes and class names."""
    if task == "regression":
        raise ValueError(
            f"The shipped {name} data has class labels: --task regression needs a CSV "
            "with a continuous target."
        )
    if groups is not None or coords is not None:
        raise ValueError(
            f"The shipped {name} data has no group or coordinate columns; "
            "--groups and --coords need a CSV."
        )
    X, y, target_names = _load_shipped(name)
    if bands is not None:
        missing = [b for b in bands if b not in X.columns]
        if missing:
            raise ValueError(f"Unknown bands {missing}; available: {list(X.columns)}.")
        X = X[list(bands)]
    return X, y, target_names


def _csv(dataset, target, task, groups, coords, exclude, bands, notes):
    """A CSV's rows, bands, target (class indices or floats), class names and name."""
    path = Path(dataset)
    if not path.is_file():
        raise ValueError(
            f"--dataset must be one of {SHIPPED_DATASETS} or an existing CSV file, "
            f"got {str(dataset)!r}."
        )
    reserved = {"--groups": [] if groups is None else [groups], "--coords": list(coords or [])}
    frame, X, target = _load_csv(path, target, task, reserved, exclude or [], bands, notes)
    labels = frame[target]
    if task == "classification":
        classes, y = np.unique(labels.to_numpy(), return_inverse=True)
        return frame, X, y, [str(c) for c in classes], path.stem
    return frame, X, labels.to_numpy(dtype=np.float64), None, path.stem


def _group_column(frame, groups):
    values = frame[groups]
    if values.isna().any():
        raise ValueError(
            f"--groups column {groups!r} has {int(values.isna().sum())} missing values: "
            "fill them (each sample needs a group) or drop those rows."
        )
    return values.to_numpy(), f"--groups column {groups!r}"


def _blocks(frame, coords, block_size, notes):
    """Spatial blocks of the coordinates as group labels."""
    xy = frame[list(coords)]
    for column in coords:
        if not pd.api.types.is_numeric_dtype(xy[column]):
            raise ValueError(f"--coords column {column!r} is not numeric.")
        n_bad = int((~np.isfinite(xy[column].to_numpy(dtype=float))).sum())
        if n_bad:
            raise ValueError(
                f"--coords column {column!r} has {n_bad} missing or infinite values: "
                "drop those rows or fill the coordinates."
            )
    blocks = spatial_blocks(xy.to_numpy(dtype=float), block_size)
    notes.append(
        f"Spatial blocks of {block_size:g} x {block_size:g} coordinate units on "
        f"{coords[0]}, {coords[1]}: {len(np.unique(blocks))} blocks with samples "
        "serve as groups."
    )
    return blocks, f"--spatial-blocks {block_size:g}"


def _subsample(y, max_samples, task, random_state, notes):
    """Sorted indices of a random subsample (stratified for classification)."""
    stratify = y if task == "classification" else None
    n_classes = len(np.unique(y)) if stratify is not None else 0
    if max_samples < n_classes:
        raise ValueError(
            f"--max-samples {max_samples} keeps fewer rows than the {n_classes} classes: "
            f"keep at least {n_classes} (one per class), or leave --max-samples out."
        )
    keep, _ = train_test_split(
        np.arange(len(y)), train_size=max_samples, stratify=stratify, random_state=random_state
    )
    notes.append(
        f"Subsampled {max_samples} of {len(y)} rows at random"
        + (" (stratified by class)." if stratify is not None else ".")
    )
    return np.sort(keep)
