"""Summary statistics of a long-format results table (the numbers behind the report)."""

import numpy as np
import pandas as pd
from scipy import stats

#: Score columns, in order of preference: a classification run has ``accuracy``, a
#: regression run ``r2`` and ``rmse``.
METRICS = ("accuracy", "r2", "rmse")


def main_metric(results):
    """The score a table summarises by default: ``accuracy``, else ``r2``."""
    for metric in METRICS:
        if metric in results.columns and results[metric].notna().any():
            return metric
    raise ValueError(f"results has none of the score columns {METRICS}.")


#: Noise models in the order the report shows them: the paper's first.
NOISE_ORDER = ("multiplicative", "additive")


def noise_kinds(results):
    """The noise models of a results table in report order (none for a table without a
    ``noise_kind`` column: it holds one, named in its run's settings)."""
    if "noise_kind" not in results.columns:
        return []
    present = set(results["noise_kind"].dropna())
    return [k for k in NOISE_ORDER if k in present] + sorted(present - set(NOISE_ORDER))


def one_kind(results, kind=None):
    """The rows of one noise model (default: the first in report order, the paper's).

    A run with several noise models repeats the clean scores under each; every table is
    computed on one model's rows so that each fold counts once.
    """
    kinds = noise_kinds(results)
    if not kinds:
        return results
    kind = kinds[0] if kind is None else kind
    if kind not in kinds:
        raise ValueError(f"results holds no rows of noise kind {kind!r}; it has {kinds}.")
    return results[results["noise_kind"] == kind]


def _clean(results, noise):
    """Rows at one noise level (the clean score by default: the lowest level)."""
    results = one_kind(results)
    level = results["noise"].min() if noise is None else noise
    rows = results[np.isclose(results["noise"], level)]
    if rows.empty:
        raise ValueError(f"No results at noise level {level}.")
    return rows


def accuracy_table(results, *, noise=None, metric=None):
    """Test score per model and depth over the folds.

    Parameters
    ----------
    results : DataFrame
        Long-format results (``model, depth, fold, noise`` and a score column).
    noise : float, default=None
        Noise level to summarise; None means the lowest level in ``results`` (0: clean).
    metric : {"accuracy", "r2", "rmse"}, default=None
        Score column; None means ``accuracy`` when present, else ``r2``.

    Returns
    -------
    table : DataFrame
        Columns ``model, depth, mean, std, n_folds`` (accuracy as a fraction; ``std`` is the
        sample standard deviation over folds, ``ddof=1``).

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import accuracy_table
    >>> results = pd.DataFrame({"model": ["nd", "nd"], "depth": [2, 2], "fold": [0, 1],
    ...                         "noise": [0.0, 0.0], "accuracy": [0.9, 0.8]})
    >>> accuracy_table(results).round(3).to_dict("records")
    [{'model': 'nd', 'depth': 2, 'mean': 0.85, 'std': 0.071, 'n_folds': 2}]
    """
    metric = metric or main_metric(results)
    rows = _clean(results, noise)
    return (
        rows.groupby(["model", "depth"], dropna=False, sort=False)[metric]
        .agg(mean="mean", std="std", n_folds="count")
        .reset_index()
    )


def _by_depth(rows, model, metric):
    """``{depth: Series of scores by fold}``; depth None for a model without one."""
    own = rows[rows["model"] == model]
    if own.empty:
        return {}
    if own["depth"].isna().all():
        return {None: own.groupby("fold")[metric].mean()}
    return {int(d): part.groupby("fold")[metric].mean() for d, part in own.groupby("depth")}


def _training_ratio(results):
    """Test size over training size, for the corrected variance (1 / (k - 1) by default)."""
    if {"n_test", "n_train", "n_val"} <= set(results.columns):
        n_test = results["n_test"].mean()
        n_train = (results["n_train"] + results["n_val"]).mean()
        if n_train > 0:
            return float(n_test / n_train)
    n_folds = results["fold"].nunique()
    return 1 / (n_folds - 1) if n_folds > 1 else np.nan


def paired_ttest(
    results,
    model_a="nd",
    model_b="mlp",
    *,
    noise=None,
    metric=None,
    correction="nadeau-bengio",
    confidence=0.95,
):
    """Paired t-tests of two models' fold scores, one per depth, with a confidence interval.

    The folds are the pairing unit: both models were trained and tested on the same fold
    with the same seed. The training sets of K-fold cross-validation overlap, so the fold
    differences are correlated and the plain paired t-test (the paper's
    :func:`scipy.stats.ttest_rel`) overstates significance. By default the variance of the
    mean difference is corrected as in Nadeau & Bengio (2003), *Inference for the
    generalization error*: ``(1 / k + n_test / n_train) * s**2`` instead of ``s**2 / k``,
    with ``k`` folds, the sample variance ``s**2`` of the differences and the test and
    training sizes of a fold (training = training + validation part); the statistic has
    ``k - 1`` degrees of freedom. A model without a depth (a peer) is compared with the
    other model at each of its depths. Folds missing for either model are dropped.

    Parameters
    ----------
    results : DataFrame
        Long-format results.
    model_a : str, default="nd"
        First model (a value of the ``model`` column).
    model_b : str, default="mlp"
        Second model; the difference is ``model_a - model_b``.
    noise : float, default=None
        Noise level; None means the lowest one (clean score).
    metric : {"accuracy", "r2", "rmse"}, default=None
        Score column; None means ``accuracy`` when present, else ``r2``.
    correction : {"nadeau-bengio", None}, default="nadeau-bengio"
        None gives the plain paired t-test (``scipy.stats.ttest_rel``).
    confidence : float, default=0.95
        Level of the interval ``ci_low, ci_high`` of the mean difference.

    Returns
    -------
    tests : DataFrame
        Columns ``depth, mean_a, mean_b, difference, ci_low, ci_high, statistic, p_value,
        n_folds``; ``difference = mean_a - mean_b``. ``depth`` is missing when neither model
        has one. ``statistic`` and ``p_value`` are NaN when the differences are identical
        in every fold or fewer than two folds are paired.

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import paired_ttest
    >>> results = pd.DataFrame({
    ...     "model": ["nd"] * 3 + ["mlp"] * 3, "depth": [2] * 6, "fold": [0, 1, 2] * 2,
    ...     "noise": [0.0] * 6, "accuracy": [0.90, 0.85, 0.95, 0.80, 0.84, 0.90]})
    >>> plain = paired_ttest(results, correction=None)
    >>> corrected = paired_ttest(results)
    >>> plain["p_value"].round(3).tolist(), corrected["p_value"].round(3).tolist()
    ([0.177], [0.324])
    """
    if correction not in ("nadeau-bengio", None):
        raise ValueError(f"correction must be 'nadeau-bengio' or None, got {correction!r}.")
    metric = metric or main_metric(results)
    rows = _clean(results, noise)
    a_by, b_by = _by_depth(rows, model_a, metric), _by_depth(rows, model_b, metric)
    if list(a_by) == [None] and list(b_by) != [None]:
        a_by = dict.fromkeys(b_by, a_by[None])
    elif list(b_by) == [None] and list(a_by) != [None]:
        b_by = dict.fromkeys(a_by, b_by[None])
    ratio = _training_ratio(rows) if correction else 0.0
    out = []
    for depth in sorted(set(a_by) & set(b_by), key=lambda d: -1 if d is None else d):
        paired = pd.concat({"a": a_by[depth], "b": b_by[depth]}, axis=1).dropna()
        a, b = paired["a"].to_numpy(), paired["b"].to_numpy()
        d, k = a - b, len(a)
        mean = d.mean() if k else np.nan
        statistic = p_value = low = high = np.nan
        if k >= 2:
            se = np.sqrt((1 / k + ratio) * d.var(ddof=1))
            t_crit = stats.t.ppf(0.5 + confidence / 2, k - 1)
            low, high = mean - t_crit * se, mean + t_crit * se
            if se > 0:
                statistic = mean / se
                p_value = 2 * stats.t.sf(abs(statistic), k - 1)
        out.append(
            {
                "depth": depth,
                "mean_a": a.mean() if k else np.nan,
                "mean_b": b.mean() if k else np.nan,
                "difference": mean,
                "ci_low": low,
                "ci_high": high,
                "statistic": float(statistic),
                "p_value": float(p_value),
                "n_folds": k,
            }
        )
    columns = ["depth", "mean_a", "mean_b", "difference", "ci_low", "ci_high"]
    table = pd.DataFrame(out, columns=columns + ["statistic", "p_value", "n_folds"])
    table["depth"] = table["depth"].astype("Int64")
    return table


def parameter_table(results, *, noise=None, metric=None):
    """Parameter counts and efficiency (score per 100 parameters).

    Parameters
    ----------
    results : DataFrame
        Long-format results with ``n_parameters``.
    noise : float, default=None
        Noise level; None means the lowest one.
    metric : {"accuracy", "r2"}, default=None
        Score column; None means ``accuracy`` when present, else ``r2``.

    Returns
    -------
    table : DataFrame
        Columns ``model, depth, n_parameters, <metric>, efficiency`` with the mean clean
        score (accuracy in %, R² as is) and ``efficiency = score / n_parameters * 100``,
        the paper's measure.

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import parameter_table
    >>> results = pd.DataFrame({"model": ["nd"], "depth": [2], "fold": [0], "noise": [0.0],
    ...                         "accuracy": [0.965], "n_parameters": [136]})
    >>> round(float(parameter_table(results)["efficiency"].iloc[0]), 2)
    70.96
    """
    metric = metric or main_metric(results)
    rows = _clean(results, noise)
    table = (
        rows.groupby(["model", "depth"], dropna=False, sort=False)
        .agg(n_parameters=("n_parameters", "mean"), score=(metric, "mean"))
        .reset_index()
        .rename(columns={"score": metric})
    )
    if metric == "accuracy":
        table[metric] *= 100
    table["efficiency"] = table[metric] / table["n_parameters"] * 100
    return table


def noise_drop_table(results, *, low=None, high=None, metric=None, kind=None):
    """Score drop between two noise levels, averaged over folds.

    Parameters
    ----------
    results : DataFrame
        Long-format results.
    low, high : float, default=None
        Noise levels; None means the lowest and the highest level in ``results``
        (0 and 10 % in the paper's protocol).
    metric : {"accuracy", "r2"}, default=None
        Score column; None means ``accuracy`` when present, else ``r2``.
    kind : {"multiplicative", "additive"}, default=None
        Noise model, for results with a ``noise_kind`` column (a run with both); None
        means the paper's multiplicative noise when present. Ignored without that column.

    Returns
    -------
    table : DataFrame
        Columns ``model, depth, <metric>_low, <metric>_high, drop`` (accuracy in %, so the
        drop is in percentage points; R² as is), where ``drop = low - high`` (positive:
        the model lost accuracy).

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import noise_drop_table
    >>> results = pd.DataFrame({"model": ["nd", "nd"], "depth": [2, 2], "fold": [0, 0],
    ...                         "noise": [0.0, 0.1], "accuracy": [0.9, 0.85]})
    >>> float(noise_drop_table(results)["drop"].iloc[0].round(6))
    5.0
    """
    metric = metric or main_metric(results)
    results = one_kind(results, kind)
    low = results["noise"].min() if low is None else low
    high = results["noise"].max() if high is None else high
    keys = ["model", "depth", "fold"]
    a = _clean(results, low).set_index(keys)[metric]
    b = _clean(results, high).set_index(keys)[metric]
    both = pd.concat({f"{metric}_low": a, f"{metric}_high": b}, axis=1).dropna()
    if metric == "accuracy":
        both *= 100
    both["drop"] = both[f"{metric}_low"] - both[f"{metric}_high"]
    table = both.groupby(level=["model", "depth"], dropna=False, sort=False).mean()
    return table.reset_index()
