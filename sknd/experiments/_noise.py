"""Robustness of fitted models to band noise (multiplicative, additive) and to illumination
changes."""

import numbers

import numpy as np
import pandas as pd
from sklearn.base import is_regressor
from sklearn.metrics import accuracy_score, r2_score, root_mean_squared_error
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .._training._noise_models import perturbed

PAPER_NOISE_LEVELS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.10)
#: Noise models of :func:`noise_robustness`: the paper's ``b + eta |b| z``, or
#: ``b + eta s z`` with ``s`` each band's standard deviation (see :func:`add_additive_noise`).
NOISE_KINDS = ("multiplicative", "additive")
#: What a run of the experiments can score: one noise model, or both (the paper's first).
RUN_NOISE_KINDS = (*NOISE_KINDS, "both")
ILLUMINATION_FACTORS = (0.5, 0.8, 1.0, 1.25, 2.0)


def run_noise_kinds(noise_kind):
    """The noise models a run's ``noise_kind`` scores, in report order."""
    return NOISE_KINDS if noise_kind == "both" else (noise_kind,)


def _values(X):
    return X.to_numpy(dtype=np.float64) if isinstance(X, pd.DataFrame) else np.asarray(X, float)


def _like(X, values):
    """Return ``values`` in the container type of ``X`` (keeps DataFrame column names)."""
    if isinstance(X, pd.DataFrame):
        return pd.DataFrame(values, index=X.index, columns=X.columns)
    return values


def metric_columns(estimator):
    """The score columns of ``estimator``'s task: accuracy, or R² and RMSE."""
    return ("r2", "rmse") if is_regressor(estimator) else ("accuracy",)


def _scores(estimator, y, predicted):
    if is_regressor(estimator):
        return {"r2": r2_score(y, predicted), "rmse": root_mean_squared_error(y, predicted)}
    return {"accuracy": accuracy_score(y, predicted)}


def add_multiplicative_noise(X, level, *, random_state=None):
    """Perturb bands as ``b + level * |b| * z`` with ``z ~ N(0, 1)`` drawn per value.

    This is the noise model of the paper's robustness analysis; ``level`` is the noise
    standard deviation as a fraction of the signal magnitude (0.1 for 10 %).

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        Band values.
    level : float
        Noise level eta (>= 0).
    random_state : int, RandomState instance or None, default=None
        Seeds ``z``.

    Returns
    -------
    X_noisy : ndarray or DataFrame of shape (n_samples, n_features)
        Same container type as ``X`` (float64).

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import add_multiplicative_noise
    >>> X = np.array([[100.0, 50.0], [0.0, 10.0]])
    >>> X_noisy = add_multiplicative_noise(X, 0.1, random_state=0)
    >>> bool(X_noisy[1, 0] == 0.0)  # noise scales with |b|: zero stays zero
    True
    """
    values = _values(X)
    z = check_random_state(random_state).standard_normal(values.shape)
    return _like(X, perturbed(values, level, z, "multiplicative"))


def add_additive_noise(X, level, scale=None, *, random_state=None):
    """Perturb bands as ``b + level * s * z``, clipped at 0 for non-negative bands.

    ``s`` is each band's standard deviation, ``z ~ N(0, 1)`` drawn per value: sensor noise
    of a fixed size, which hits dark pixels as hard as bright ones (multiplicative noise,
    the paper's, spares them). Where every input value is non-negative (reflectance,
    radiance, counts) the result is clipped at 0, as a sensor's would be.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        Band values.
    level : float
        Noise level eta (>= 0): the noise standard deviation as a fraction of ``s``.
    scale : array-like of shape (n_features,), default=None
        ``s``; None uses the standard deviation of each column of ``X``. Pass the training
        rows' to perturb test rows as :func:`run_experiments` does.
    random_state : int, RandomState instance or None, default=None
        Seeds ``z``.

    Returns
    -------
    X_noisy : ndarray or DataFrame of shape (n_samples, n_features)
        Same container type as ``X`` (float64).

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import add_additive_noise
    >>> X = np.array([[100.0, 50.0], [0.0, 10.0]])
    >>> add_additive_noise(X, 0.1, scale=[10.0, 10.0], random_state=1).round(2)
    array([[101.62,  49.39],
           [  0.  ,   8.93]])

    The dark value 0.0 drew -0.53 and was clipped at 0.
    """
    values = _values(X)
    z = check_random_state(random_state).standard_normal(values.shape)
    return _like(X, perturbed(values, level, z, "additive", _scale(values, scale)))


def _scale(values, scale):
    """``scale`` as an array, or the columns' standard deviations when None."""
    if scale is None:
        return values.std(axis=0)
    scale = np.asarray(scale, dtype=np.float64)
    if scale.shape != (values.shape[1],) or not (scale >= 0).all():
        raise ValueError(
            f"scale must hold one non-negative value per band ({values.shape[1]}), got "
            f"shape {scale.shape}."
        )
    return scale


@validate_params(
    {
        "estimator": [object],
        "X": ["array-like"],
        "y": ["array-like"],
        "levels": ["array-like"],
        "n_repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "kind": [StrOptions(set(NOISE_KINDS))],
        "scale": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def noise_robustness(
    estimator,
    X,
    y,
    levels=PAPER_NOISE_LEVELS,
    n_repeats=10,
    random_state=None,
    *,
    kind="multiplicative",
    scale=None,
):
    """Accuracy (classifiers) or R² and RMSE (regressors) on inputs perturbed by noise.

    For each repeat one standard normal draw ``z`` is shared by all levels (common random
    numbers), so the accuracy curves over ``levels`` are smooth and differences between
    levels are not masked by draw-to-draw variation. Passing the same ``random_state`` for
    several estimators evaluates them on identical perturbations.

    Parameters
    ----------
    estimator : fitted classifier or regressor
        Anything with ``predict``; :func:`sklearn.base.is_regressor` picks the scores.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Clean test inputs (band values).
    y : array-like of shape (n_samples,)
        True labels or target values.
    levels : array-like of float, default=(0, 0.02, 0.04, 0.06, 0.08, 0.1)
        Noise levels eta, see :func:`add_multiplicative_noise` and
        :func:`add_additive_noise`.
    n_repeats : int, default=10
        Number of independent noise draws.
    random_state : int, RandomState instance or None, default=None
        Seeds the noise draws.
    kind : {"multiplicative", "additive"}, default="multiplicative"
        The paper's ``b + eta |b| z``, or ``b + eta s z`` clipped at 0 for non-negative
        bands (:func:`add_additive_noise`).
    scale : array-like of shape (n_features,), default=None
        ``s`` of additive noise (e.g. the training rows' standard deviations); None uses
        those of ``X``. Ignored for multiplicative noise.

    Returns
    -------
    scores : DataFrame
        One row per (repeat, level) with columns ``noise``, ``repeat``, ``accuracy``
        (regressors: ``noise``, ``repeat``, ``r2``, ``rmse``).
        ``scores.groupby("noise").accuracy.mean()`` gives the robustness curve.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sknd.experiments import noise_robustness
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = LogisticRegression().fit(X, y)
    >>> scores = noise_robustness(clf, X, y, levels=[0.0, 0.1], n_repeats=3, random_state=0)
    >>> scores.shape
    (6, 3)
    >>> curve = scores.groupby("noise").accuracy.mean()
    >>> bool(curve[0.0] >= curve[0.1])
    True
    """
    rng = check_random_state(random_state)
    values = _values(X)
    levels = np.asarray(levels, dtype=float)
    if np.any(levels < 0):
        raise ValueError(f"Noise levels must be non-negative, got {levels}.")
    scale = _scale(values, scale) if kind == "additive" else None
    rows = []
    for repeat in range(n_repeats):
        z = rng.standard_normal(values.shape)
        for level in levels:
            X_noisy = _like(X, perturbed(values, level, z, kind, scale))
            scores = _scores(estimator, y, estimator.predict(X_noisy))
            rows.append({"noise": float(level), "repeat": repeat, **scores})
    return pd.DataFrame(rows, columns=["noise", "repeat", *metric_columns(estimator)])


@validate_params(
    {
        "estimator": [object],
        "X": ["array-like"],
        "y": ["array-like"],
        "factors": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def illumination_check(estimator, X, y, factors=ILLUMINATION_FACTORS):
    """Score and prediction stability when all bands are multiplied by a common factor.

    A uniform gain ``k`` on every band models a change of illumination (or of the sensor's
    calibration gain). A normalized difference ``(b_i - b_j) / (b_i + b_j)`` does not change,
    so a model that sees the bands only through normalized differences (the ND architecture)
    predicts the same classes for every ``k`` up to its ``epsilon``; a model on raw bands
    (MLP, logistic regression on bands) does not.

    Parameters
    ----------
    estimator : fitted classifier or regressor
        Anything with ``predict``.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Inputs (band values).
    y : array-like of shape (n_samples,)
        True labels or target values.
    factors : array-like of float, default=(0.5, 0.8, 1.0, 1.25, 2.0)
        Gains ``k`` (> 0) applied to all bands.

    Returns
    -------
    scores : DataFrame
        One row per factor with columns ``factor``, ``accuracy`` (regressors: ``r2``,
        ``rmse``) and ``agreement``: the fraction of samples whose prediction equals the
        prediction on the unscaled inputs (for regressors: within 1e-5 of it,
        on the scale of the predictions).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sknd.experiments import illumination_check
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(10, 100, size=(200, 2))
    >>> y = (X[:, 0] > X[:, 1]).astype(int)  # a ratio rule: invariant to illumination
    >>> clf = LogisticRegression().fit(X, y)
    >>> scores = illumination_check(clf, X, y, factors=[1.0, 2.0])
    >>> scores.columns.tolist()
    ['factor', 'accuracy', 'agreement']
    """
    values = _values(X)
    factors = np.asarray(factors, dtype=float)
    if np.any(factors <= 0):
        raise ValueError(f"Illumination factors must be positive, got {factors}.")
    reference = estimator.predict(X)
    regression = is_regressor(estimator)
    scale = float(np.max(np.abs(reference))) if regression and np.size(reference) else 0.0
    rows = []
    for factor in factors:
        predicted = estimator.predict(_like(X, values * factor))
        if regression:
            # float32 networks: equal up to rounding is "unchanged".
            same = np.abs(predicted - reference) <= 1e-5 * max(scale, 1e-12)
        else:
            same = predicted == reference
        rows.append(
            {
                "factor": float(factor),
                **_scores(estimator, y, predicted),
                "agreement": float(np.mean(same)),
            }
        )
    return pd.DataFrame(rows, columns=["factor", *metric_columns(estimator), "agreement"])
