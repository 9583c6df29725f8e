"""The table of models an experiment compares: one :class:`ModelSpec` per row of the report.

Adding a model is one line in :data:`NETWORK_SPECS` (an sknd network with its own
parameters, fitted for classification and regression alike) or in :data:`PEER_SPECS`.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.cross_decomposition import PLSRegression
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ._peers import BestPairNDClassifier, BestPairNDRegressor, ClassicNDFeatures, sklearn_mlp_params

TASKS = ("classification", "regression")

#: Training settings of the paper (Adam, lr 0.01, weight decay 1e-4, batch 32, at most 150
#: epochs, early stopping on validation accuracy with patience 25).
PAPER_SETTINGS = {
    "lr": 0.01,
    "weight_decay": 1e-4,
    "batch_size": 32,
    "max_epochs": 150,
    "early_stopping": True,
    "patience": 25,
    # The paper's training recipe; the pairs stay the estimators' default ("auto": every pair
    # below 50 bands, as in the paper's data; a parameter budget for hyperspectral CSVs).
    "recipe": "paper",
}

#: Ridge penalties searched by the ridge peers (efficient leave-one-out in ``RidgeCV``).
RIDGE_ALPHAS = tuple(np.logspace(-4, 4, 17))
#: ``C`` values searched by the logistic peers (5-fold cross-validation of the log-loss).
LOGISTIC_CS = tuple(np.logspace(-4, 4, 9))
# scikit-learn >= 1.8 warns until its simplified attributes and explicit l1_ratios (0: the
# L2 penalty) are asked for; older releases know neither (and warn on l1_ratios).
_LEGACY_OFF = (
    {"use_legacy_attributes": False, "l1_ratios": (0.0,)}
    if "use_legacy_attributes" in LogisticRegressionCV().get_params()
    else {}
)


@dataclass(frozen=True)
class ModelSpec:
    """One model of the comparison: how to build it and how the protocol fits it.

    Parameters
    ----------
    name : str
        Key in ``results.csv`` and in ``run_experiments(models=...)``.
    label : str
        Name in the report's tables and figures.
    build : callable
        ``build(spec, context)`` returns an unfitted estimator; ``context`` is a dict with
        ``task, depth, seed, settings, network_params, n_hidden, n_estimators,
        validation_fraction, n_bands``.
    tasks : tuple of str, default=("classification", "regression")
        Tasks the model takes part in.
    by_depth : bool, default=False
        Fitted once per depth (networks) instead of once per fold.
    uses_validation : bool, default=False
        Fitted as ``fit(X_train, y_train, X_val=X_val, y_val=y_val)``; otherwise fitted on
        training + validation data.
    network : bool, default=False
        An sknd network: its training curves and coefficients are collected.
    params : dict, optional
        Estimator parameters of this row (for networks, on top of the recipe); empty by
        default.
    paper_recipe : bool, default=True
        Networks only: start from :data:`PAPER_SETTINGS`; False starts from the
        estimator's own defaults.

    Examples
    --------
    >>> from sknd.experiments import ModelSpec, network_spec
    >>> spec = network_spec("nd_wide", "ND, 64 units", "nd", hidden_units=64)
    >>> spec.name, spec.by_depth, spec.params
    ('nd_wide', True, {'architecture': 'nd', 'hidden_units': 64})
    """

    name: str
    label: str
    build: Callable
    tasks: tuple = TASKS
    by_depth: bool = False
    uses_validation: bool = False
    network: bool = False
    params: dict = field(default_factory=dict)
    paper_recipe: bool = True


def _build_network(spec, context):
    from .._estimators._classifier import NDClassifier
    from .._estimators._regressor import NDRegressor

    estimator = NDClassifier if context["task"] == "classification" else NDRegressor
    params = dict(PAPER_SETTINGS) if spec.paper_recipe else {}
    params.update(spec.params)
    # The user's overrides (--max-epochs, --sensor...) apply to every network row.
    params.update(context["network_params"])
    return estimator(depth=context["depth"], random_state=context["seed"], **params)


def network_spec(name, label, architecture, *, paper_recipe=True, **params):
    """A row of the table for an sknd network (``NDClassifier`` or ``NDRegressor``).

    Parameters
    ----------
    name : str
        Key of the row.
    label : str
        Name in the report.
    architecture : {"nd", "mlp", "attnd"}
        Network architecture.
    paper_recipe : bool, default=True
        Train with :data:`PAPER_SETTINGS` (False: the estimator's defaults).
    **params
        Further estimator parameters of this row.

    Returns
    -------
    spec : ModelSpec
        Fitted at every depth, with early stopping on the fold's validation part.

    Examples
    --------
    >>> from sknd.experiments import network_spec
    >>> network_spec("nd", "ND", "nd").label
    'ND'
    """
    return ModelSpec(
        name,
        label,
        _build_network,
        by_depth=True,
        uses_validation=True,
        network=True,
        params={"architecture": architecture, **params},
        paper_recipe=paper_recipe,
    )


def _sklearn_mlp(spec, context):
    params = sklearn_mlp_params(
        context["depth"],
        context["n_hidden"],
        context["settings"],
        context["validation_fraction"],
        context["seed"],
    )
    mlp = MLPClassifier if context["task"] == "classification" else MLPRegressor
    # Standardizing is what a scikit-learn user does before an MLP on raw digital numbers.
    return make_pipeline(StandardScaler(), mlp(**params))


def _linear(features):
    def build(spec, context):
        steps = [ClassicNDFeatures()] if features == "nd" else []
        if context["task"] == "classification":
            # The penalty tuned as a user would (5-fold log-loss): the fixed-index baseline
            # should be the best convex model on those features, not an untuned one.
            model = LogisticRegressionCV(
                Cs=LOGISTIC_CS, scoring="neg_log_loss", max_iter=1000, **_LEGACY_OFF
            )
        else:
            model = RidgeCV(alphas=RIDGE_ALPHAS)
        return make_pipeline(*steps, StandardScaler(), model)

    return build


def _best_pair(spec, context):
    if context["task"] == "classification":
        return BestPairNDClassifier()
    return BestPairNDRegressor()


def _random_forest(spec, context):
    forest = (
        RandomForestClassifier if context["task"] == "classification" else RandomForestRegressor
    )
    return forest(n_estimators=context["n_estimators"], random_state=context["seed"], n_jobs=1)


def _pls(spec, context):
    components = list(range(1, min(10, context["n_bands"]) + 1))
    # PLSRegression standardizes the bands itself (scale=True).
    return GridSearchCV(PLSRegression(), {"n_components": components}, cv=5)


#: The sknd networks, fitted at every depth with NDClassifier or NDRegressor.
NETWORK_SPECS = (
    network_spec("nd", "ND", "nd"),
    network_spec("mlp", "MLP", "mlp"),
    network_spec("attnd", "AttND", "attnd"),
    # sknd's default training recipe and pair policy (docs/training.md), beside the paper's.
    network_spec("nd_sknd", "ND (sknd default)", "nd", paper_recipe=False),
    # The same with the raw bands beside the indices: what illumination invariance costs (or
    # not) on the user's data, one row below (and the illumination table).
    network_spec(
        "nd_sknd_passthrough",
        "ND + passthrough (sknd default)",
        "nd",
        paper_recipe=False,
        passthrough=True,
    ),
)

#: Peers that hold the classic index of every band pair for every sample, and the peak
#: memory of one fit in such (n_samples, n_pairs) float64 tables (tracemalloc, 400 samples
#: x 100 bands): with thousands of bands (millions of pairs) they would not fit in memory.
ALL_PAIR_TABLES = {"logreg_nd": 4, "ridge_nd": 4, "best_nd_pair": 3}

#: The peers a user would pick instead, on the same folds.
PEER_SPECS = (
    ModelSpec("sklearn_mlp", "scikit-learn MLP", _sklearn_mlp, by_depth=True),
    ModelSpec(
        "logreg_bands",
        "LogisticRegressionCV, standardized bands",
        _linear("bands"),
        tasks=("classification",),
    ),
    ModelSpec(
        "logreg_nd",
        "LogisticRegressionCV, standardized classic NDs",
        _linear("nd"),
        tasks=("classification",),
    ),
    ModelSpec(
        "ridge_bands", "RidgeCV, standardized bands", _linear("bands"), tasks=("regression",)
    ),
    ModelSpec(
        "ridge_nd", "RidgeCV, standardized classic NDs", _linear("nd"), tasks=("regression",)
    ),
    ModelSpec("best_nd_pair", "best single classic ND", _best_pair, uses_validation=True),
    ModelSpec("pls", "PLS regression", _pls, tasks=("regression",)),
    ModelSpec("random_forest", "RandomForest, raw bands", _random_forest),
)

MODEL_SPECS = NETWORK_SPECS + PEER_SPECS

#: The fixed-index baseline that answers "was learning the coefficients worth it?": the
#: same classic normalized differences a depth-2 ND network starts from, standardized, in a
#: convex linear model.
FIXED_INDEX_BASELINE = {"classification": "logreg_nd", "regression": "ridge_nd"}


def specs_for(task, models=None):
    """The specs of ``task`` in table order, restricted to ``models`` (names or specs).

    Parameters
    ----------
    task : {"classification", "regression"}
        The learning task.
    models : sequence of str or ModelSpec, default=None
        Names from :data:`MODEL_SPECS`, or specs of new rows; None means all of the task.

    Returns
    -------
    specs : list of ModelSpec
        In table order, or in the order of ``models`` when given.

    Examples
    --------
    >>> from sknd.experiments import specs_for
    >>> [spec.name for spec in specs_for("regression")][-4:]
    ['ridge_nd', 'best_nd_pair', 'pls', 'random_forest']
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}.")
    table = [spec for spec in MODEL_SPECS if task in spec.tasks]
    if models is None:
        return table
    by_name = {spec.name: spec for spec in table}
    chosen, unknown = [], []
    for model in models:
        if isinstance(model, ModelSpec):
            chosen.append(model)
        elif model in by_name:
            chosen.append(by_name[model])
        else:
            unknown.append(model)
    if unknown:
        raise ValueError(f"Unknown models {unknown} for {task}; expected some of {list(by_name)}.")
    return chosen
