"""Summary statistics of a long-format results table (the numbers behind the report)."""

import numpy as np
import pandas as pd
from scipy import stats


def _clean(results, noise):
    """Rows at one noise level (the clean accuracy by default: the lowest level)."""
    level = results["noise"].min() if noise is None else noise
    rows = results[np.isclose(results["noise"], level)]
    if rows.empty:
        raise ValueError(f"No results at noise level {level}.")
    return rows


def accuracy_table(results, *, noise=None):
    """Test accuracy per model and depth over the folds.

    Parameters
    ----------
    results : DataFrame
        Long-format results (``model, depth, fold, noise, accuracy, n_parameters``).
    noise : float, default=None
        Noise level to summarise; None means the lowest level in ``results`` (0: clean).

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
    rows = _clean(results, noise)
    table = (
        rows.groupby(["model", "depth"], dropna=False, sort=False)["accuracy"]
        .agg(mean="mean", std="std", n_folds="count")
        .reset_index()
    )
    return table


def paired_ttest(results, model_a="nd", model_b="mlp", *, noise=None):
    """Paired t-tests of two models' fold accuracies, one per depth.

    The folds are the pairing unit: both models were trained and tested on the same fold
    with the same seed, so :func:`scipy.stats.ttest_rel` on the per-fold accuracies is the
    test the paper reports. Folds missing for either model are dropped.

    Parameters
    ----------
    results : DataFrame
        Long-format results.
    model_a, model_b : str, default="nd", "mlp"
        Models to compare (values of the ``model`` column).
    noise : float, default=None
        Noise level; None means the lowest one (clean accuracy).

    Returns
    -------
    tests : DataFrame
        Columns ``depth, mean_a, mean_b, difference, statistic, p_value, n_folds``;
        ``difference = mean_a - mean_b``. ``p_value`` is NaN when the accuracies are
        identical in every fold or fewer than two folds are paired.

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import paired_ttest
    >>> results = pd.DataFrame({
    ...     "model": ["nd"] * 3 + ["mlp"] * 3, "depth": [2] * 6, "fold": [0, 1, 2] * 2,
    ...     "noise": [0.0] * 6, "accuracy": [0.90, 0.85, 0.95, 0.80, 0.84, 0.90]})
    >>> paired_ttest(results)[["depth", "difference", "p_value"]].round(3).to_dict("records")
    [{'depth': 2, 'difference': 0.053, 'p_value': 0.177}]
    """
    rows = _clean(results, noise)
    out = []
    depths = rows.loc[rows["model"].isin([model_a, model_b]), "depth"].dropna().unique()
    for depth in sorted(depths):
        at_depth = rows[rows["depth"] == depth]
        paired = (
            at_depth[at_depth["model"].isin([model_a, model_b])]
            .pivot_table(index="fold", columns="model", values="accuracy", aggfunc="mean")
            .dropna()
        )
        if model_a not in paired or model_b not in paired:
            continue
        a, b = paired[model_a].to_numpy(), paired[model_b].to_numpy()
        statistic = p_value = np.nan
        if len(a) >= 2 and not np.allclose(a, b):
            statistic, p_value = stats.ttest_rel(a, b)
        out.append(
            {
                "depth": int(depth),
                "mean_a": a.mean() if len(a) else np.nan,
                "mean_b": b.mean() if len(b) else np.nan,
                "difference": (a - b).mean() if len(a) else np.nan,
                "statistic": float(statistic),
                "p_value": float(p_value),
                "n_folds": len(a),
            }
        )
    return pd.DataFrame(
        out, columns=["depth", "mean_a", "mean_b", "difference", "statistic", "p_value", "n_folds"]
    )


def parameter_table(results, *, noise=None):
    """Parameter counts and efficiency (accuracy in % per 100 parameters).

    Returns
    -------
    table : DataFrame
        Columns ``model, depth, n_parameters, accuracy, efficiency`` with the mean clean
        accuracy in % and ``efficiency = accuracy / n_parameters * 100``, the paper's
        measure.

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import parameter_table
    >>> results = pd.DataFrame({"model": ["nd"], "depth": [2], "fold": [0], "noise": [0.0],
    ...                         "accuracy": [0.965], "n_parameters": [136]})
    >>> round(float(parameter_table(results)["efficiency"].iloc[0]), 2)
    70.96
    """
    rows = _clean(results, noise)
    table = (
        rows.groupby(["model", "depth"], dropna=False, sort=False)
        .agg(n_parameters=("n_parameters", "mean"), accuracy=("accuracy", "mean"))
        .reset_index()
    )
    table["accuracy"] *= 100
    table["efficiency"] = table["accuracy"] / table["n_parameters"] * 100
    return table


def noise_drop_table(results, *, low=None, high=None):
    """Accuracy drop (percentage points) between two noise levels, averaged over folds.

    Parameters
    ----------
    results : DataFrame
        Long-format results.
    low, high : float, default=None
        Noise levels; None means the lowest and the highest level in ``results``
        (0 and 10 % in the paper's protocol).

    Returns
    -------
    table : DataFrame
        Columns ``model, depth, accuracy_low, accuracy_high, drop`` in %, where
        ``drop = accuracy_low - accuracy_high`` (positive: the model lost accuracy).

    Examples
    --------
    >>> import pandas as pd
    >>> from sknd.experiments import noise_drop_table
    >>> results = pd.DataFrame({"model": ["nd", "nd"], "depth": [2, 2], "fold": [0, 0],
    ...                         "noise": [0.0, 0.1], "accuracy": [0.9, 0.85]})
    >>> float(noise_drop_table(results)["drop"].iloc[0].round(6))
    5.0
    """
    low = results["noise"].min() if low is None else low
    high = results["noise"].max() if high is None else high
    keys = ["model", "depth", "fold"]
    a = _clean(results, low).set_index(keys)["accuracy"]
    b = _clean(results, high).set_index(keys)["accuracy"]
    both = pd.concat({"accuracy_low": a, "accuracy_high": b}, axis=1).dropna() * 100
    both["drop"] = both["accuracy_low"] - both["accuracy_high"]
    table = both.groupby(level=["model", "depth"], dropna=False, sort=False).mean()
    return table.reset_index()
