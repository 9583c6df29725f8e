"""What an experiment fits, decided before anything trains: the plan.

A plan is the models (rows of the model table) x their depths x the folds, one task each,
with the fold's seed; every task shares the training settings, the noise levels and the
illumination factors it is scored under. Making the plan also makes the automatic choices
of the run (signed variant for negative bands, hidden width), each written as a note.
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from ..networks import default_hidden_units
from ._checks import check_validation_classes
from ._noise import run_noise_kinds
from ._specs import PAPER_SETTINGS, specs_for
from ._splits import PAPER_VALIDATION_SHARE, experiment_splits

__all__ = ["SCORE_COLUMNS", "Plan", "make_plan"]

#: Score columns of ``results.csv`` by task.
SCORE_COLUMNS = {"classification": ["accuracy"], "regression": ["r2", "rmse"]}


@dataclass
class Plan:
    """The tasks of a run and everything they share (see :func:`make_plan`)."""

    dataset: str
    task: str
    specs: list
    depths: list
    noise_levels: list
    noise_repeats: int
    noise_kind: str
    illumination_factors: list
    n_estimators: int
    keep_estimators: str
    #: The paper's training settings with the caller's overrides of them.
    settings: dict
    #: Parameters of every sknd network row (the caller's, plus the automatic choices).
    network_params: dict
    #: Hidden width of the scikit-learn MLP: hidden_units, or the networks' default.
    n_hidden: int
    n_bands: int
    splits: list
    fold_seeds: np.ndarray
    #: One dict ``model, depth, fold, seed`` per fit, deepest networks first.
    tasks: list
    notes: list = field(default_factory=list)

    @property
    def metrics(self):
        return SCORE_COLUMNS[self.task]

    @property
    def n_pairs(self):
        return self.n_bands * (self.n_bands - 1) // 2

    def config(self):
        """What a worker needs besides its task and its fold (see :func:`run_task`)."""
        return {
            "dataset": self.dataset,
            "specs": {spec.name: spec for spec in self.specs},
            "context": {
                "task": self.task,
                "settings": self.settings,
                "network_params": self.network_params,
                "n_hidden": self.n_hidden,
                "n_estimators": self.n_estimators,
                "n_bands": self.n_bands,
            },
            "metrics": self.metrics,
            "noise_levels": self.noise_levels,
            "noise_repeats": self.noise_repeats,
            "noise_kinds": run_noise_kinds(self.noise_kind),
            "illumination_factors": self.illumination_factors,
            "keep_estimators": self.keep_estimators,
        }


def make_plan(
    X,
    y,
    *,
    task,
    groups,
    depths,
    n_splits,
    models,
    noise_levels,
    noise_repeats,
    noise_kind,
    illumination_factors,
    estimator_params,
    n_estimators,
    keep_estimators,
    random_state,
    dataset,
    notes,
):
    """The plan of a run on checked data (``X`` a DataFrame, ``y`` an array), with the
    arguments of :func:`run_experiments`; ``notes`` are the data preparation's."""
    specs = specs_for(task, models)
    depths = sorted(int(d) for d in depths)
    notes = list(notes or [])
    settings, network_params, n_hidden = _training(X, estimator_params, notes)
    splits, fold_seeds = _folds(y, groups, task, n_splits, specs, random_state)
    return Plan(
        dataset=dataset,
        task=task,
        specs=specs,
        depths=depths,
        noise_levels=[float(level) for level in noise_levels],
        noise_repeats=noise_repeats,
        noise_kind=noise_kind,
        illumination_factors=list(illumination_factors),
        n_estimators=n_estimators,
        keep_estimators=keep_estimators,
        settings=settings,
        network_params=network_params,
        n_hidden=n_hidden,
        n_bands=X.shape[1],
        splits=splits,
        fold_seeds=fold_seeds,
        tasks=_tasks(specs, depths, fold_seeds),
        notes=notes,
    )


def _training(X, estimator_params, notes):
    """The networks' settings and parameters and the hidden width, with a note for each
    automatic choice."""
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
            "with hidden_units. The sknd recipe's deeper networks keep their own default "
            "width, within the parameters of scikit-learn's default MLP."
        )
    return settings, network_params, n_hidden


def _folds(y, groups, task, n_splits, specs, random_state):
    """The folds' (train, validation, test) indices and one seed per fold."""
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
    return splits, rng.randint(np.iinfo(np.int32).max, size=n_splits)


def _tasks(specs, depths, fold_seeds):
    tasks = [
        {"model": spec.name, "depth": depth, "fold": fold, "seed": int(seed)}
        for fold, seed in enumerate(fold_seeds)
        for spec in specs
        for depth in (depths if spec.by_depth else [None])
    ]
    # Deep networks first: the long tasks start early and the short ones fill the gaps,
    # which keeps parallel workers busy until the end.
    return sorted(tasks, key=lambda t: -(t["depth"] or 0))
