"""The paper's cross-validation protocol: fit every model on the same folds, score it clean,
under multiplicative noise and under an illumination change, and collect the results."""

import numbers
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.multiclass import type_of_target

from .._tasks import check_label_kinds
from .._threads import one_thread
from ..networks import default_hidden_units
from ._checks import check_run_arguments, check_validation_classes
from ._noise import ILLUMINATION_FACTORS, PAPER_NOISE_LEVELS, illumination_check, noise_robustness
from ._peers import count_parameters
from ._progress import Progress
from ._records import class_counts, coefficient_table, data_name, screening_notes, versions
from ._specs import (
    FIXED_INDEX_BASELINE,
    MODEL_SPECS,
    PAPER_SETTINGS,
    TASKS,
    specs_for,
)
from ._splits import PAPER_VALIDATION_SHARE, experiment_splits

#: The architectures compared in the paper, fitted with :class:`sknd.NDClassifier`.
PAPER_MODELS = ("nd", "mlp", "attnd")
#: All models of a classification run, in report order.
MODELS = tuple(spec.name for spec in specs_for("classification"))
MODEL_LABELS = {spec.name: spec.label for spec in MODEL_SPECS}

#: Score columns of ``results.csv`` by task.
SCORE_COLUMNS = {"classification": ["accuracy"], "regression": ["r2", "rmse"]}
_RESULT_KEYS = ["dataset", "model", "depth", "fold", "noise"]
_RESULT_INFO = [
    "n_parameters",
    "fit_time",
    "n_epochs",
    "best_epoch",
    "learning_gain",
    "seed",
    "n_train",
    "n_val",
    "n_test",
    "selected_pair",
]
RESULT_COLUMNS = _RESULT_KEYS + ["accuracy"] + _RESULT_INFO
HISTORY_COLUMNS = ["model", "depth", "fold", "epoch", "train_loss", "valid_loss", "valid_score"]
COEFFICIENT_COLUMNS = [
    "model",
    "depth",
    "fold",
    "band_i",
    "band_j",
    "coef_a",
    "coef_c",
    "weight_a",
    "weight_c",
    "ratio",
    "known_index",
]


@dataclass
class ExperimentResults:
    """Everything a run of :func:`run_experiments` produced.

    Parameters
    ----------
    results : DataFrame
        Long format, one row per (model, depth, fold, noise); see :func:`run_experiments`.
    histories : DataFrame
        Training curves of the paper models: ``model, depth, fold, epoch, train_loss,
        valid_loss, valid_score``.
    coefficients : DataFrame
        Learned coefficients of the ND and AttND models: ``model, depth, fold, band_i,
        band_j, coef_a, coef_c, weight_a, weight_c, ratio`` with weights ``softplus(coef)``
        and ``ratio = weight_a / weight_c``.
    illumination : DataFrame
        :func:`illumination_check` per model, depth and fold.
    estimators : dict
        Fitted estimators kept by ``keep_estimators``, keyed by ``(model, depth, fold)``.
    settings : dict
        The protocol: dataset, sizes, folds, depths, seeds, training settings, versions.
    wall_time : float
        Seconds the whole run took.
    """

    results: pd.DataFrame
    histories: pd.DataFrame
    coefficients: pd.DataFrame
    illumination: pd.DataFrame
    estimators: dict = field(default_factory=dict, repr=False)
    settings: dict = field(default_factory=dict)
    wall_time: float = 0.0


def _stack(frames, columns):
    """Stack the per-task frames (None where a task has none), or an empty frame of ``columns``."""
    frames = [frame for frame in frames if frame is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _learning_gain(final):
    """The fitted network's ``learning_gain_`` (NaN where it has none or it is None)."""
    gain = getattr(final, "learning_gain_", None)
    return np.nan if gain is None else float(gain)


def _final_step(estimator):
    return estimator[-1] if hasattr(estimator, "steps") else estimator


def _fit(task, X, y, split, config):
    """Fit one model of one fold; return the estimator and its fit time."""
    spec = config["specs"][task["model"]]
    train, val, _ = split
    context = {
        **config["context"],
        "depth": task["depth"],
        "seed": task["seed"],
        "validation_fraction": len(val) / (len(train) + len(val)),
    }
    estimator = spec.build(spec, context)
    start = time.perf_counter()
    try:
        if spec.uses_validation:
            estimator.fit(X.iloc[train], y[train], X_val=X.iloc[val], y_val=y[val])
        else:
            # Models without a use for a validation set learn from all non-test data;
            # scikit-learn's MLP holds out the same share internally for early stopping.
            rest = np.concatenate([train, val])
            estimator.fit(X.iloc[rest], y[rest])
    except ValueError as exc:
        raise _fold_error(exc, spec, task) from exc
    return estimator, time.perf_counter() - start


def _fold_error(exc, spec, task):
    """``exc`` said of the fold's parts: the caller passed X and y, not X_val and y_val."""
    depth = "" if task["depth"] is None else f" at depth {task['depth']}"
    message = str(exc).replace("X_val", "the validation part of X")
    message = message.replace("y_val", "the validation part of y")
    return ValueError(f"Fitting {spec.name}{depth} on fold {task['fold']} failed: {message}")


def _n_iter(estimator):
    """Epochs or solver iterations as one number (LogisticRegression reports an array)."""
    n_iter = getattr(estimator, "n_iter_", None)
    return np.nan if n_iter is None else int(np.max(n_iter))


def _run_task(task, X, y, split, config):
    """Fit and evaluate one (model, depth, fold); runs in a joblib worker."""
    with one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator, fit_time = _fit(task, X, y, split, config)
        test = split[2]
        X_te, y_te = X.iloc[test], y[test]
        noise = noise_robustness(
            estimator,
            X_te,
            y_te,
            levels=config["noise_levels"],
            n_repeats=config["noise_repeats"],
            random_state=task["seed"],
        )
        illumination = illumination_check(
            estimator, X_te, y_te, factors=config["illumination_factors"]
        )
    final = _final_step(estimator)
    spec = config["specs"][task["model"]]
    key = {"model": task["model"], "depth": task["depth"], "fold": task["fold"]}
    best_epoch = getattr(final, "best_epoch_", None)
    if best_epoch is None and getattr(final, "validation_scores_", None):
        best_epoch = int(np.argmax(final.validation_scores_)) + 1
    pair = getattr(final, "pair_names_", None)
    common = {
        "dataset": config["dataset"],
        **key,
        "n_parameters": count_parameters(estimator),
        "fit_time": fit_time,
        "n_epochs": _n_iter(final),
        "best_epoch": np.nan if best_epoch is None else best_epoch,
        "learning_gain": _learning_gain(final),
        "seed": task["seed"],
        "n_train": len(split[0]),
        "n_val": len(split[1]),
        "n_test": len(split[2]),
        "selected_pair": "" if pair is None else "/".join(pair),
    }
    metrics = config["metrics"]
    curve = noise.groupby("noise", sort=True)[metrics].mean()
    rows = [{**common, "noise": level, **row} for level, row in curve.iterrows()]
    history = coefficients = None
    n_pairs = None
    if spec.network:
        history = final.history_[["epoch", "train_loss", "valid_loss", "valid_score"]].copy()
        history.insert(0, "fold", task["fold"])
        history.insert(0, "depth", task["depth"])
        history.insert(0, "model", task["model"])
        n_pairs = len(final.pairs_)
        if n_pairs and len(getattr(final, "coef_a_", ())):
            coefficients = coefficient_table(final, key, X.columns)
    illumination = illumination.assign(**key)
    keep = config["keep_estimators"] == "all" or (
        config["keep_estimators"] == "first_fold" and task["fold"] == 0
    )
    return {
        "key": key,
        "rows": rows,
        "history": history,
        "coefficients": coefficients,
        "illumination": illumination,
        "estimator": estimator if keep else None,
        "fit_time": fit_time,
        "score": curve[metrics[0]].iloc[0] if len(curve) else np.nan,
        "n_pairs": n_pairs,
    }


def _make_tasks(specs, depths, fold_seeds):
    tasks = []
    for fold, seed in enumerate(fold_seeds):
        for spec in specs:
            for depth in depths if spec.by_depth else [None]:
                tasks.append({"model": spec.name, "depth": depth, "fold": fold, "seed": int(seed)})
    # Deep networks first: the long tasks start early and the short ones fill the gaps,
    # which keeps parallel workers busy until the end.
    return sorted(tasks, key=lambda t: -(t["depth"] or 0))


@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like"],
        "task": [StrOptions(set(TASKS))],
        "groups": ["array-like", None],
        "depths": ["array-like"],
        "n_splits": [Interval(numbers.Integral, 2, None, closed="left")],
        "models": ["array-like", None],
        "noise_levels": ["array-like"],
        "noise_repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "illumination_factors": ["array-like"],
        "estimator_params": [dict, None],
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "keep_estimators": [StrOptions({"first_fold", "all", "none"})],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "dataset_name": [str, None],
        "target_names": ["array-like", None],
        "notes": [list, None],
    },
    prefer_skip_nested_validation=True,
)
def run_experiments(
    X,
    y,
    *,
    task="classification",
    groups=None,
    depths=(2, 3, 4),
    n_splits=10,
    models=None,
    noise_levels=PAPER_NOISE_LEVELS,
    noise_repeats=5,
    illumination_factors=ILLUMINATION_FACTORS,
    estimator_params=None,
    n_estimators=100,
    keep_estimators="first_fold",
    n_jobs=1,
    random_state=0,
    verbose=1,
    dataset_name=None,
    target_names=None,
    notes=None,
):
    """Run the paper's protocol with the ND, MLP and AttND networks and their peers.

    The folds come from :func:`experiment_splits`: without ``groups``, the paper's
    stratified K-fold (:func:`paper_splits`: inside each fold a stratified 7 : 2
    train/validation split of the rest, i.e. 70/20/10 % with 10 folds) for classification
    and a shuffled K-fold with the same shares for regression; with ``groups`` (fields,
    plots, :func:`spatial_blocks`), group folds that never split a group, for the test
    *and* the validation part. Within a fold every model gets the same seed: it
    initialises the networks, the random forest and scikit-learn's MLP, and draws the
    test-set noise, so that all models are compared on identical data and perturbations.

    The models are rows of a table of :class:`ModelSpec` (see :func:`specs_for`):

    - ``"nd"``, ``"mlp"``, ``"attnd"``: :class:`sknd.NDClassifier` (regression:
      :class:`sknd.NDRegressor`) with that ``architecture`` at each depth, the paper's
      training settings (overridable with ``estimator_params``), trained on the training
      part with early stopping on the validation part (``fit(X, y, X_val=..., y_val=...)``).
    - ``"sklearn_mlp"``: scikit-learn's ``MLPClassifier`` / ``MLPRegressor`` after
      standardization, ``depth - 1`` hidden layers as wide as the networks' (see
      :func:`sklearn_mlp_params`); fitted on training + validation data, early-stopping on
      an internal random hold-out of the validation share.
    - classification: ``"logreg_bands"``, ``"logreg_nd"``: standardization and
      :class:`~sklearn.linear_model.LogisticRegression` on the raw bands, or on all classic
      unit-coefficient normalized differences (:class:`ClassicNDFeatures`: the fixed-index
      baseline a depth-2 ND network starts from); regression: ``"ridge_bands"``,
      ``"ridge_nd"``: the same with :class:`~sklearn.linear_model.RidgeCV`, and ``"pls"``:
      :class:`~sklearn.cross_decomposition.PLSRegression` with 1-10 components chosen by
      an inner 5-fold CV. All fitted on training + validation data.
    - ``"best_nd_pair"``: :class:`BestPairNDClassifier` / :class:`BestPairNDRegressor`,
      pair chosen on the validation part.
    - ``"random_forest"``: a random forest on the raw bands, fitted on training +
      validation data.

    Each model is then scored on the test part clean and under multiplicative noise
    (:func:`noise_robustness`, mean over ``noise_repeats`` draws) and under illumination
    changes (:func:`illumination_check`): accuracy for classification, R² and RMSE for
    regression.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_samples, n_bands)
        Band values; DataFrame column names name the bands in the coefficient analysis.
        With negative values the networks use ``variant="signed"`` unless
        ``estimator_params`` says otherwise (a note says so).
    y : array-like of shape (n_samples,)
        Class labels, or continuous targets with ``task="regression"``.
    task : {"classification", "regression"}, default="classification"
        A continuous ``y`` with ``task="classification"`` raises a ``ValueError``.
    groups : array-like of shape (n_samples,), default=None
        Group labels; no group is ever split between training, validation and test.
    depths : sequence of int, default=(2, 3, 4)
        Network depths (layers counted from input to output, as in the paper).
    n_splits : int, default=10
        Number of cross-validation folds.
    models : sequence of str or ModelSpec, default=None
        Names of rows of the model table (:func:`specs_for` lists those of a task), or
        :class:`ModelSpec` objects for new rows; None means all rows of the task.
    noise_levels : sequence of float, default=(0, 0.02, 0.04, 0.06, 0.08, 0.1)
        Noise levels eta; the first one should be 0 (the clean score).
    noise_repeats : int, default=5
        Noise draws per level, averaged into one result row.
    illumination_factors : sequence of float, default=(0.5, 0.8, 1.0, 1.25, 2.0)
        Gains applied to all bands in the illumination check.
    estimator_params : dict, default=None
        Parameters of every sknd network row, on top of its recipe, e.g.
        ``{"max_epochs": 20}`` or ``{"sensor": "sentinel2"}``. ``lr``, ``weight_decay``,
        ``batch_size``, ``max_epochs``, ``early_stopping``, ``patience`` and
        ``hidden_units`` are mirrored in the scikit-learn MLP peer.
    n_estimators : int, default=100
        Trees of the random forest peer.
    keep_estimators : {"first_fold", "all", "none"}, default="first_fold"
        Which fitted estimators to return (the figures use fold 0).
    n_jobs : int, default=1
        Parallel workers (joblib); each runs one (model, depth, fold) at a time with one
        thread.
    random_state : int, RandomState instance or None, default=0
        Seeds the folds and the per-fold seeds.
    verbose : int, default=1
        When > 0, print the automatic choices once and a progress bar with the time left
        to stderr.
    dataset_name : str, default=None
        Stored in the ``dataset`` column and titles the report. None uses
        ``X.attrs["name"]`` when set, else describes the data ("523 samples x 9 bands,
        target 'class'").
    target_names : array-like of str, default=None
        Class names for integer-coded ``y``, shown in the report.
    notes : list of str, default=None
        Notes about the data preparation (from :func:`load_experiment_data`), listed with
        the run's own automatic choices in ``settings["notes"]``.

    Returns
    -------
    experiment : ExperimentResults
        ``experiment.results`` has one row per (model, depth, fold, noise) with columns
        ``dataset, model, depth, fold, noise``, the scores (``accuracy``; regression:
        ``r2, rmse``) and ``n_parameters, fit_time, n_epochs, best_epoch, seed, n_train,
        n_val, n_test, selected_pair``; ``depth`` is missing (``<NA>``) for peers that
        have none.

    Examples
    --------
    >>> from sknd.datasets import load_forest_type
    >>> from sknd.experiments import run_experiments
    >>> X, y = load_forest_type(return_X_y=True, as_frame=True)
    >>> experiment = run_experiments(
    ...     X, y, depths=[2], n_splits=3, models=["nd", "logreg_bands"],
    ...     estimator_params={"max_epochs": 3}, noise_levels=[0.0, 0.1], noise_repeats=1,
    ...     verbose=0)
    >>> experiment.results.groupby("model").size().to_dict()
    {'logreg_bands': 6, 'nd': 6}
    """
    start = time.perf_counter()
    check_label_kinds(y)  # before numpy turns [1, "a"] into text
    name = dataset_name or data_name(X, y)
    if not isinstance(X, pd.DataFrame):
        X = np.asarray(X, dtype=np.float64)
        X = pd.DataFrame(X, columns=[f"b{i}" for i in range(X.shape[1])])
    else:
        X = X.set_axis([str(c) for c in X.columns], axis=1).reset_index(drop=True)
    y = np.asarray(y)
    if task == "classification" and type_of_target(y) == "continuous":
        raise ValueError(
            f"y is continuous ({len(np.unique(y))} distinct values): pass "
            "task='regression' to evaluate NDRegressor, or class labels."
        )
    if task == "regression":
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            raise ValueError(
                f"y has {int((~np.isfinite(y)).sum())} missing or infinite values; drop "
                "those samples first."
            )
    check_run_arguments(
        X,
        y,
        task=task,
        depths=depths,
        models=models,
        noise_levels=noise_levels,
        estimator_params=estimator_params,
        n_jobs=n_jobs,
        n_splits=n_splits,
    )
    specs = specs_for(task, models)
    depths = sorted(int(d) for d in depths)
    noise_levels = [float(level) for level in noise_levels]
    notes = list(notes or [])

    user_params = dict(estimator_params or {})
    settings = dict(PAPER_SETTINGS)
    settings.update({k: v for k, v in user_params.items() if k in PAPER_SETTINGS})
    network_params = dict(user_params)
    if "variant" not in network_params and (X.to_numpy() < 0).any():
        # The default "reflectance" variant needs non-negative inputs.
        network_params["variant"] = "signed"
        n_negative = int((X.to_numpy() < 0).sum())
        notes.append(
            f"{n_negative} negative band values: the networks use variant='signed' "
            "(pass variant in estimator_params to choose)."
        )
    n_pairs = X.shape[1] * (X.shape[1] - 1) // 2
    n_hidden = user_params.get("hidden_units") or default_hidden_units(n_pairs)
    if not user_params.get("hidden_units"):
        notes.append(
            f"Hidden width {n_hidden} units (the networks' default for all {n_pairs} band "
            "pairs: their number clipped to 8..256), mirrored in the scikit-learn MLP; set "
            "with hidden_units."
        )
    metrics = SCORE_COLUMNS[task]
    config = {
        "dataset": name,
        "specs": {spec.name: spec for spec in specs},
        "context": {
            "task": task,
            "settings": settings,
            "network_params": network_params,
            "n_hidden": n_hidden,
            "n_estimators": n_estimators,
            "n_bands": X.shape[1],
        },
        "metrics": metrics,
        "noise_levels": noise_levels,
        "noise_repeats": noise_repeats,
        "illumination_factors": list(illumination_factors),
        "keep_estimators": keep_estimators,
    }

    rng = check_random_state(random_state)
    splits = experiment_splits(
        y,
        groups,
        n_splits=n_splits,
        task=task,
        validation_share=PAPER_VALIDATION_SHARE,
        random_state=rng.randint(np.iinfo(np.int32).max),
    )
    if task == "classification" and any(spec.uses_validation for spec in specs):
        check_validation_classes(y, splits)
    fold_seeds = rng.randint(np.iinfo(np.int32).max, size=n_splits)
    tasks = _make_tasks(specs, depths, fold_seeds)
    if verbose > 0:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)

    progress = Progress(len(tasks), enabled=verbose > 0)
    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    outputs = []
    for out in parallel(
        delayed(_run_task)(task, X, y, splits[task["fold"]], config) for task in tasks
    ):
        outputs.append(out)
        key = out["key"]
        depth = "" if key["depth"] is None else f" d{key['depth']}"
        progress.update(
            f"fold {key['fold']}{depth} {key['model']}: {metrics[0]} {out['score']:.3f}"
        )
    progress.close()
    run_notes = screening_notes(outputs, n_pairs, user_params.get("hidden_units"))
    if verbose > 0:
        for note in run_notes:
            print(f"note: {note}", file=sys.stderr)
    notes += run_notes

    order = {spec.name: i for i, spec in enumerate(specs)}

    def sort_key(out):
        k = out["key"]
        return (order[k["model"]], k["depth"] or 0, k["fold"])

    outputs.sort(key=sort_key)
    columns = _RESULT_KEYS + metrics + _RESULT_INFO
    results = pd.DataFrame([row for out in outputs for row in out["rows"]], columns=columns)
    results["depth"] = results["depth"].astype("Int64")
    histories = _stack([out["history"] for out in outputs], HISTORY_COLUMNS)
    coefficients = _stack([out["coefficients"] for out in outputs], COEFFICIENT_COLUMNS)
    illumination = pd.concat([out["illumination"] for out in outputs], ignore_index=True)
    illumination = illumination[["model", "depth", "fold", "factor", *metrics, "agreement"]]
    illumination["depth"] = illumination["depth"].astype("Int64")
    estimators = {
        (o["key"]["model"], o["key"]["depth"], o["key"]["fold"]): o["estimator"]
        for o in outputs
        if o["estimator"] is not None
    }
    settings_out = {
        "dataset": name,
        "task": task,
        "n_samples": len(y),
        "n_bands": int(X.shape[1]),
        "bands": list(X.columns),
        "n_splits": n_splits,
        "grouped": groups is not None,
        "n_groups": None if groups is None else int(len(np.unique(groups))),
        "depths": depths,
        "models": [spec.name for spec in specs],
        "model_labels": {spec.name: spec.label for spec in specs},
        "depth_models": [spec.name for spec in specs if spec.by_depth],
        "network_models": [spec.name for spec in specs if spec.network],
        "baseline": FIXED_INDEX_BASELINE[task],
        "noise_levels": noise_levels,
        "noise_repeats": noise_repeats,
        "illumination_factors": list(illumination_factors),
        "estimator_params": {**settings, **network_params},
        "network_overrides": network_params,
        "network_recipes": {
            spec.name: {"paper_recipe": spec.paper_recipe, "params": dict(spec.params)}
            for spec in specs
            if spec.network
        },
        "n_hidden_sklearn_mlp": n_hidden,
        "n_estimators": n_estimators,
        "random_state": random_state if isinstance(random_state, numbers.Integral) else None,
        "fold_seeds": [int(s) for s in fold_seeds],
        "n_jobs": n_jobs,
        "notes": notes,
        "versions": versions(),
    }
    if task == "classification":
        settings_out["class_counts"] = class_counts(y, target_names)
    else:
        settings_out["target_summary"] = {
            "mean": float(y.mean()),
            "std": float(y.std(ddof=1)) if len(y) > 1 else 0.0,
            "min": float(y.min()),
            "max": float(y.max()),
        }
    return ExperimentResults(
        results=results,
        histories=histories,
        coefficients=coefficients,
        illumination=illumination,
        estimators=estimators,
        settings=settings_out,
        wall_time=time.perf_counter() - start,
    )
