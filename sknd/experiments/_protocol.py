"""The paper's cross-validation protocol: fit every model on the same folds, score it clean,
under multiplicative noise and under an illumination change, and collect the results."""

import numbers
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .._formula import softplus
from .._threads import one_thread
from ..networks import default_hidden_units
from ._noise import ILLUMINATION_FACTORS, PAPER_NOISE_LEVELS, illumination_check, noise_robustness
from ._peers import PEER_LABELS, PEERS, count_parameters, make_peer
from ._progress import Progress
from ._splits import PAPER_VALIDATION_SHARE, paper_splits

#: The architectures compared in the paper, fitted with :class:`sknd.NDClassifier`.
PAPER_MODELS = ("nd", "mlp", "attnd")
MODELS = PAPER_MODELS + PEERS
MODEL_LABELS = {"nd": "ND", "mlp": "MLP", "attnd": "AttND", **PEER_LABELS}
#: Models whose architecture depends on the depth (the others are fitted once per fold).
DEPTH_MODELS = PAPER_MODELS + ("sklearn_mlp",)

#: Training settings of the paper (Adam, lr 0.01, weight decay 1e-4, batch 32, at most 150
#: epochs, early stopping on validation accuracy with patience 25).
PAPER_SETTINGS = {
    "lr": 0.01,
    "weight_decay": 1e-4,
    "batch_size": 32,
    "max_epochs": 150,
    "early_stopping": True,
    "patience": 25,
}

RESULT_COLUMNS = [
    "dataset",
    "model",
    "depth",
    "fold",
    "noise",
    "accuracy",
    "n_parameters",
    "fit_time",
    "n_epochs",
    "best_epoch",
    "seed",
    "n_train",
    "n_val",
    "n_test",
    "selected_pair",
]
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
]


@dataclass
class ExperimentResults:
    """Everything a run of :func:`run_experiments` produced.

    Attributes
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


def _final_step(estimator):
    return estimator[-1] if hasattr(estimator, "steps") else estimator


def _fit(task, X, y, split, config):
    """Fit one model of one fold; return the estimator and its fit time."""
    model, depth, seed = task["model"], task["depth"], task["seed"]
    train, val, _ = split
    X_tr, y_tr, X_va, y_va = X.iloc[train], y[train], X.iloc[val], y[val]
    settings = config["settings"]
    start = time.perf_counter()
    if model in PAPER_MODELS:
        from .. import NDClassifier

        estimator = NDClassifier(
            depth=depth, architecture=model, random_state=seed, **config["estimator_params"]
        )
        estimator.fit(X_tr, y_tr, X_val=X_va, y_val=y_va)
    else:
        estimator = make_peer(
            model,
            depth=depth,
            n_hidden=config["n_hidden"],
            settings=settings,
            validation_fraction=len(val) / (len(train) + len(val)),
            random_state=seed,
            n_estimators=config["n_estimators"],
        )
        if model == "best_nd_pair":
            estimator.fit(X_tr, y_tr, X_val=X_va, y_val=y_va)
        else:
            # Models without a use for a validation set learn from all non-test data;
            # scikit-learn's MLP holds out the same share internally for early stopping.
            rest = np.concatenate([train, val])
            estimator.fit(X.iloc[rest], y[rest])
    return estimator, time.perf_counter() - start


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
    key = {"model": task["model"], "depth": task["depth"], "fold": task["fold"]}
    best_epoch = getattr(final, "best_epoch_", None)
    if best_epoch is None and hasattr(final, "validation_scores_") and final.validation_scores_:
        best_epoch = int(np.argmax(final.validation_scores_)) + 1
    pair = getattr(final, "pair_names_", None)
    common = {
        "dataset": config["dataset"],
        **key,
        "n_parameters": count_parameters(estimator),
        "fit_time": fit_time,
        "n_epochs": getattr(final, "n_iter_", np.nan),
        "best_epoch": np.nan if best_epoch is None else best_epoch,
        "seed": task["seed"],
        "n_train": len(split[0]),
        "n_val": len(split[1]),
        "n_test": len(split[2]),
        "selected_pair": "" if pair is None else "/".join(pair),
    }
    curve = noise.groupby("noise", sort=True)["accuracy"].mean()
    rows = [{**common, "noise": level, "accuracy": acc} for level, acc in curve.items()]
    history = coefficients = None
    if task["model"] in PAPER_MODELS:
        history = final.history_[["epoch", "train_loss", "valid_loss", "valid_score"]].copy()
        history.insert(0, "fold", task["fold"])
        history.insert(0, "depth", task["depth"])
        history.insert(0, "model", task["model"])
    if task["model"] in ("nd", "attnd") and len(final.pairs_):
        names = np.asarray(getattr(final, "feature_names_in_", X.columns), dtype=object)
        weight_a, weight_c = softplus(final.coef_a_), softplus(final.coef_c_)
        coefficients = pd.DataFrame(
            {
                **key,
                "band_i": names[final.pairs_[:, 0]],
                "band_j": names[final.pairs_[:, 1]],
                "coef_a": final.coef_a_,
                "coef_c": final.coef_c_,
                "weight_a": weight_a,
                "weight_c": weight_c,
                "ratio": weight_a / weight_c,
            }
        )
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
        "accuracy": curve.iloc[0] if len(curve) else np.nan,
    }


def _make_tasks(models, depths, fold_seeds):
    tasks = []
    for fold, seed in enumerate(fold_seeds):
        for model in models:
            for depth in depths if model in DEPTH_MODELS else [None]:
                tasks.append({"model": model, "depth": depth, "fold": fold, "seed": int(seed)})
    # Deep networks first: the long tasks start early and the short ones fill the gaps,
    # which keeps parallel workers busy until the end.
    return sorted(tasks, key=lambda t: -(t["depth"] or 0))


def _versions():
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


@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like"],
        "depths": ["array-like"],
        "n_splits": [Interval(numbers.Integral, 2, None, closed="left")],
        "models": ["array-like"],
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
    },
    prefer_skip_nested_validation=True,
)
def run_experiments(
    X,
    y,
    *,
    depths=(2, 3, 4),
    n_splits=10,
    models=MODELS,
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
):
    """Run the paper's protocol with the ND, MLP and AttND models and their peers.

    The folds come from :func:`paper_splits` (stratified K-fold; inside each fold a
    stratified 7 : 2 train/validation split of the rest, i.e. 70/20/10 % with 10 folds).
    Within a fold every model gets the same seed: it initialises the networks, the random
    forest and scikit-learn's MLP, and draws the test-set noise, so that all models are
    compared on identical data and perturbations.

    - ``"nd"``, ``"mlp"``, ``"attnd"``: :class:`sknd.NDClassifier` with that
      ``architecture`` at each depth, the paper's training settings (overridable with
      ``estimator_params``), trained on the training part with early stopping on the
      validation part (``fit(X, y, X_val=..., y_val=...)``).
    - ``"sklearn_mlp"``: :class:`~sklearn.neural_network.MLPClassifier` after
      standardization, ``depth - 1`` hidden layers of as many units as the ND layer has
      pairs, the same optimiser settings (see :func:`sklearn_mlp_params`); it is fitted on
      training + validation data and early-stops on an internal hold-out of the validation
      share.
    - ``"logreg_bands"``, ``"logreg_nd"``: standardization and
      :class:`~sklearn.linear_model.LogisticRegression` on the raw bands, or on all classic
      unit-coefficient normalized differences (:class:`ClassicNDFeatures`); fitted on
      training + validation data.
    - ``"best_nd_pair"``: :class:`BestPairNDClassifier`, pair chosen on the validation part.
    - ``"random_forest"``: :class:`~sklearn.ensemble.RandomForestClassifier` on the raw
      bands, fitted on training + validation data.

    Each model is then scored on the test part clean and under multiplicative noise
    (:func:`noise_robustness`, mean over ``noise_repeats`` draws) and under illumination
    changes (:func:`illumination_check`).

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_samples, n_bands)
        Band values; DataFrame column names name the bands in the coefficient analysis.
        With negative values the ND models use ``variant="signed"`` unless
        ``estimator_params`` says otherwise.
    y : array-like of shape (n_samples,)
        Class labels.
    depths : sequence of int, default=(2, 3, 4)
        Network depths (layers counted from input to output, as in the paper).
    n_splits : int, default=10
        Number of cross-validation folds.
    models : sequence of str, default=all
        Any of ``"nd", "mlp", "attnd", "sklearn_mlp", "logreg_bands", "logreg_nd",
        "best_nd_pair", "random_forest"``.
    noise_levels : sequence of float, default=(0, 0.02, 0.04, 0.06, 0.08, 0.1)
        Noise levels eta; the first one should be 0 (the clean accuracy).
    noise_repeats : int, default=5
        Noise draws per level, averaged into one result row.
    illumination_factors : sequence of float, default=(0.5, 0.8, 1.0, 1.25, 2.0)
        Gains applied to all bands in the illumination check.
    estimator_params : dict, default=None
        Overrides of the :class:`sknd.NDClassifier` parameters, e.g.
        ``{"max_epochs": 20}``. ``lr``, ``weight_decay``, ``batch_size``, ``max_epochs``,
        ``early_stopping``, ``patience`` and ``hidden_units`` are mirrored in the
        scikit-learn MLP peer.
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
        Print a progress line per finished model to stderr when > 0.
    dataset_name : str, default=None
        Stored in the ``dataset`` column and the settings.

    Returns
    -------
    experiment : ExperimentResults
        ``experiment.results`` has one row per (model, depth, fold, noise) with columns
        ``dataset, model, depth, fold, noise, accuracy, n_parameters, fit_time, n_epochs,
        best_epoch, seed, n_train, n_val, n_test, selected_pair``; ``depth`` is missing
        (``<NA>``) for peers that have none.

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
    if not isinstance(X, pd.DataFrame):
        X = np.asarray(X, dtype=np.float64)
        X = pd.DataFrame(X, columns=[f"b{i}" for i in range(X.shape[1])])
    else:
        X = X.set_axis([str(c) for c in X.columns], axis=1).reset_index(drop=True)
    y = np.asarray(y)
    models = list(models)
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise ValueError(f"Unknown models {unknown}; expected some of {MODELS}.")
    depths = sorted(int(d) for d in depths)
    if any(d < 2 for d in depths):
        raise ValueError(f"Depths must be >= 2, got {depths}.")
    noise_levels = [float(level) for level in noise_levels]
    _, class_counts = np.unique(y, return_counts=True)
    if class_counts.min() < n_splits:
        raise ValueError(
            f"The smallest class has {class_counts.min()} samples, fewer than n_splits={n_splits}."
        )

    params = dict(PAPER_SETTINGS)
    params.update(estimator_params or {})
    if "variant" not in params and (X.to_numpy() < 0).any():
        # The default "reflectance" variant needs non-negative inputs.
        params["variant"] = "signed"
    n_pairs = X.shape[1] * (X.shape[1] - 1) // 2
    config = {
        "dataset": dataset_name or "",
        "estimator_params": params,
        "settings": params,
        "n_hidden": params.get("hidden_units") or default_hidden_units(n_pairs),
        "n_estimators": n_estimators,
        "noise_levels": noise_levels,
        "noise_repeats": noise_repeats,
        "illumination_factors": list(illumination_factors),
        "keep_estimators": keep_estimators,
    }

    rng = check_random_state(random_state)
    splits = paper_splits(
        y,
        n_splits,
        validation_share=PAPER_VALIDATION_SHARE,
        random_state=rng.randint(np.iinfo(np.int32).max),
    )
    fold_seeds = rng.randint(np.iinfo(np.int32).max, size=n_splits)
    tasks = _make_tasks(models, depths, fold_seeds)

    progress = Progress(len(tasks), enabled=verbose > 0)
    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    outputs = []
    for out in parallel(
        delayed(_run_task)(task, X, y, splits[task["fold"]], config) for task in tasks
    ):
        outputs.append(out)
        key = out["key"]
        depth = "" if key["depth"] is None else f" depth {key['depth']}"
        progress.update(
            f"fold {key['fold']}{depth} {key['model']}: accuracy {out['accuracy']:.3f} "
            f"({out['fit_time']:.1f} s)"
        )

    order = {m: i for i, m in enumerate(MODELS)}

    def sort_key(out):
        k = out["key"]
        return (order[k["model"]], k["depth"] or 0, k["fold"])

    outputs.sort(key=sort_key)
    results = pd.DataFrame([row for out in outputs for row in out["rows"]], columns=RESULT_COLUMNS)
    results["depth"] = results["depth"].astype("Int64")
    histories = _stack([out["history"] for out in outputs], HISTORY_COLUMNS)
    coefficients = _stack([out["coefficients"] for out in outputs], COEFFICIENT_COLUMNS)
    illumination = pd.concat([out["illumination"] for out in outputs], ignore_index=True)
    illumination = illumination[["model", "depth", "fold", "factor", "accuracy", "agreement"]]
    illumination["depth"] = illumination["depth"].astype("Int64")
    estimators = {
        (o["key"]["model"], o["key"]["depth"], o["key"]["fold"]): o["estimator"]
        for o in outputs
        if o["estimator"] is not None
    }
    settings = {
        "dataset": dataset_name or "",
        "n_samples": len(y),
        "n_bands": int(X.shape[1]),
        "bands": list(X.columns),
        "class_counts": {str(c): int(n) for c, n in zip(*np.unique(y, return_counts=True))},
        "n_splits": n_splits,
        "depths": depths,
        "models": models,
        "noise_levels": noise_levels,
        "noise_repeats": noise_repeats,
        "illumination_factors": list(illumination_factors),
        "estimator_params": params,
        "n_hidden_sklearn_mlp": config["n_hidden"],
        "n_estimators": n_estimators,
        "random_state": random_state if isinstance(random_state, numbers.Integral) else None,
        "fold_seeds": [int(s) for s in fold_seeds],
        "n_jobs": n_jobs,
        "versions": _versions(),
    }
    return ExperimentResults(
        results=results,
        histories=histories,
        coefficients=coefficients,
        illumination=illumination,
        estimators=estimators,
        settings=settings,
        wall_time=time.perf_counter() - start,
    )
