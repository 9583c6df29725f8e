"""The paper's cross-validation protocol as a pipeline: plan what to fit (models x depths
x folds, :mod:`._plan`), run the plan's tasks in parallel (each fits one model on one fold
and scores it clean, under noise and under an illumination change: :mod:`._worker`),
collect their records into tables, which :func:`write_report` turns into the report."""

import numbers
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.multiclass import type_of_target

from .._data._tasks import check_label_kinds
from ._checks import check_run_arguments
from ._noise import ILLUMINATION_FACTORS, PAPER_NOISE_LEVELS, RUN_NOISE_KINDS
from ._plan import make_plan
from ._progress import Progress
from ._records import class_counts, data_name, screening_notes, versions
from ._specs import FIXED_INDEX_BASELINE, MODEL_SPECS, TASKS, specs_for
from ._worker import run_task

#: The architectures compared in the paper, fitted with :class:`sknd.NDClassifier`.
PAPER_MODELS = ("nd", "mlp", "attnd")
#: All models of a classification run, in report order.
MODELS = tuple(spec.name for spec in specs_for("classification"))
MODEL_LABELS = {spec.name: spec.label for spec in MODEL_SPECS}

_RESULT_KEYS = ["dataset", "model", "depth", "fold", "noise_kind", "noise"]
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
    "a",
    "c",
    "k",
    "importance",
    "known_index",
]


@dataclass
class ExperimentResults:
    """Everything a run of :func:`run_experiments` produced.

    Parameters
    ----------
    results : DataFrame
        Long format, one row per (model, depth, fold, noise kind, noise level); see
        :func:`run_experiments`.
    histories : DataFrame
        Training curves of the paper models: ``model, depth, fold, epoch, train_loss,
        valid_loss, valid_score``.
    coefficients : DataFrame
        Learned indices of the sknd networks with an ND layer, each fit's ``indices_``
        after its key: ``model, depth, fold, band_i, band_j, a, c, k, importance,
        known_index`` (``k = softplus(a) / softplus(c)``, the weighting of ``band_i``
        relative to ``band_j``; see :func:`sknd.inspection.index_table`).
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
        "noise_kind": [StrOptions(set(RUN_NOISE_KINDS))],
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
    noise_kind="both",
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

    Each model is then scored on the test part clean and under noise
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
    noise_kind : {"both", "multiplicative", "additive"}, default="both"
        The paper's ``b + eta |b| z``, ``b + eta s z`` with ``s`` the training rows'
        standard deviation of each band, clipped at 0 for non-negative bands (sensor noise
        of a fixed size, which hits dark pixels hardest; :func:`add_additive_noise`), or
        both on the same draws (the results' ``noise_kind`` column tells them apart; the
        tables and the report show the paper's first).
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
        ``experiment.results`` has one row per (model, depth, fold, noise kind, noise
        level) with columns ``dataset, model, depth, fold, noise_kind, noise``, the
        scores (``accuracy``; regression: ``r2, rmse``) and ``n_parameters, fit_time,
        n_epochs, best_epoch, seed, n_train, n_val, n_test, selected_pair``; ``depth`` is
        missing (``<NA>``) for peers that have none.

    Examples
    --------
    >>> from sknd.datasets import load_forest_type
    >>> from sknd.experiments import run_experiments
    >>> X, y = load_forest_type(return_X_y=True, as_frame=True)
    >>> experiment = run_experiments(
    ...     X, y, depths=[2], n_splits=3, models=["nd", "logreg_bands"],
    ...     estimator_params={"max_epochs": 3}, noise_levels=[0.0, 0.1], noise_repeats=1,
    ...     verbose=0)
    >>> experiment.results.groupby("model").size().to_dict()  # 3 folds, 2 levels, 2 kinds
    {'logreg_bands': 12, 'nd': 12}
    """
    start = time.perf_counter()
    # Check everything before the first fit, plan what to fit, run, collect the records.
    X, y, name = _checked_data(X, y, task, dataset_name)
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
    plan = make_plan(
        X,
        y,
        task=task,
        groups=groups,
        depths=depths,
        n_splits=n_splits,
        models=models,
        noise_levels=noise_levels,
        noise_repeats=noise_repeats,
        noise_kind=noise_kind,
        illumination_factors=illumination_factors,
        estimator_params=estimator_params,
        n_estimators=n_estimators,
        keep_estimators=keep_estimators,
        random_state=random_state,
        dataset=name,
        notes=notes,
    )
    outputs = _run(plan, X, y, n_jobs=n_jobs, verbose=verbose)
    settings = _settings(plan, X, y, groups, random_state, n_jobs, target_names)
    wall_time = time.perf_counter() - start
    return ExperimentResults(**_collect(outputs, plan), settings=settings, wall_time=wall_time)


def _checked_data(X, y, task, dataset_name):
    """``X`` as a DataFrame with string column names, ``y`` as an array fit for ``task``,
    and the dataset's name."""
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
    return X, y, name


def _run(plan, X, y, *, n_jobs, verbose):
    """Run the plan's tasks (joblib, results as they finish) under a progress bar; the
    notes of the plan, and those only the fits can tell (pair screening), go to stderr."""
    _print_notes(plan.notes, verbose)
    config = plan.config()
    progress = Progress(len(plan.tasks), enabled=verbose > 0)
    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    outputs = []
    for out in parallel(
        delayed(run_task)(task, X, y, plan.splits[task["fold"]], config) for task in plan.tasks
    ):
        outputs.append(out)
        key = out["key"]
        depth = "" if key["depth"] is None else f" d{key['depth']}"
        progress.update(
            f"fold {key['fold']}{depth} {key['model']}: {plan.metrics[0]} {out['score']:.3f}"
        )
    progress.close()
    run_notes = screening_notes(outputs, plan.n_pairs, plan.network_params.get("hidden_units"))
    _print_notes(run_notes, verbose)
    plan.notes += run_notes
    return outputs


def _print_notes(notes, verbose):
    if verbose > 0:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)


def _collect(outputs, plan):
    """The tasks' records as the tables of :class:`ExperimentResults`, in report order."""
    order = {spec.name: i for i, spec in enumerate(plan.specs)}
    outputs = sorted(
        outputs,
        key=lambda out: (order[out["key"]["model"]], out["key"]["depth"] or 0, out["key"]["fold"]),
    )
    metrics = plan.metrics
    columns = _RESULT_KEYS + metrics + _RESULT_INFO
    results = pd.DataFrame([row for out in outputs for row in out["rows"]], columns=columns)
    results["depth"] = results["depth"].astype("Int64")
    illumination = pd.concat([out["illumination"] for out in outputs], ignore_index=True)
    illumination = illumination[["model", "depth", "fold", "factor", *metrics, "agreement"]]
    illumination["depth"] = illumination["depth"].astype("Int64")
    return {
        "results": results,
        "histories": _stack([out["history"] for out in outputs], HISTORY_COLUMNS),
        "coefficients": _stack([out["coefficients"] for out in outputs], COEFFICIENT_COLUMNS),
        "illumination": illumination,
        "estimators": {
            (out["key"]["model"], out["key"]["depth"], out["key"]["fold"]): out["estimator"]
            for out in outputs
            if out["estimator"] is not None
        },
    }


def _stack(frames, columns):
    """Stack the per-task frames (None where a task has none), or an empty frame of ``columns``."""
    frames = [frame for frame in frames if frame is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _settings(plan, X, y, groups, random_state, n_jobs, target_names):
    """The protocol of a run, as ``settings.json`` and the report show it."""
    specs = plan.specs
    settings = {
        "dataset": plan.dataset,
        "task": plan.task,
        "n_samples": len(y),
        "n_bands": int(X.shape[1]),
        "bands": list(X.columns),
        "n_splits": len(plan.fold_seeds),
        "grouped": groups is not None,
        "n_groups": None if groups is None else int(len(np.unique(groups))),
        "depths": plan.depths,
        "models": [spec.name for spec in specs],
        "model_labels": {spec.name: spec.label for spec in specs},
        "depth_models": [spec.name for spec in specs if spec.by_depth],
        "network_models": [spec.name for spec in specs if spec.network],
        "baseline": FIXED_INDEX_BASELINE[plan.task],
        "noise_levels": plan.noise_levels,
        "noise_repeats": plan.noise_repeats,
        "noise_kind": plan.noise_kind,
        "illumination_factors": plan.illumination_factors,
        "estimator_params": {**plan.settings, **plan.network_params},
        "network_overrides": plan.network_params,
        "network_recipes": {
            spec.name: {"paper_recipe": spec.paper_recipe, "params": dict(spec.params)}
            for spec in specs
            if spec.network
        },
        "n_hidden_sklearn_mlp": plan.n_hidden,
        "n_estimators": plan.n_estimators,
        "random_state": random_state if isinstance(random_state, numbers.Integral) else None,
        "fold_seeds": [int(s) for s in plan.fold_seeds],
        "n_jobs": n_jobs,
        "notes": plan.notes,
        "versions": versions(),
    }
    if plan.task == "classification":
        settings["class_counts"] = class_counts(y, target_names)
    else:
        settings["target_summary"] = _target_summary(y)
    return settings


def _target_summary(y):
    return {
        "mean": float(y.mean()),
        "std": float(y.std(ddof=1)) if len(y) > 1 else 0.0,
        "min": float(y.min()),
        "max": float(y.max()),
    }
