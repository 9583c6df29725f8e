"""Matplotlib figures of fitted normalized-difference models.

matplotlib is an optional dependency (the ``plot`` extra); it is
imported when a function is called. Every function draws on ``ax`` when given,
on a new figure otherwise, and returns the Axes.

The coefficient figures follow the paper: for each band pair the learned
weighting ``k = softplus(a) / softplus(c)`` is shown on a logarithmic scale
with a diverging colormap centred at ``k = 1`` (the classic symmetric index);
red means the first band of the pair (``band_i``, the matrix row) is
upweighted, blue that the second (``band_j``, the column) is.
"""

from __future__ import annotations

import numpy as np

from ._data._validation import fitted_indices
from ._nd._formula import log_softplus
from .indices import known_index, why_no_known_indices
from .inspection import get_bands

__all__ = [
    "plot_coefficient_matrix",
    "plot_noise_robustness",
    "plot_top_asymmetric_pairs",
    "plot_training_curves",
    "pyplot",
]

#: Score columns plot_noise_robustness looks for, in order (sknd.experiments' results and
#: noise_robustness name them so), and how its axis names them.
_SCORES = ("accuracy", "r2", "rmse")
_SCORE_NAMES = {"accuracy": "Accuracy", "r2": "R²", "rmse": "RMSE"}

# Smallest half-range of the colour scale, in log2 units, so that an untrained
# model (all k = 1) still gets a valid, visibly neutral scale.
_MIN_LOG2_RANGE = np.log2(1.05)


def pyplot():
    """Import ``matplotlib.pyplot``, or say how to install matplotlib.

    matplotlib is an optional dependency (the ``plot`` extra). The functions of this
    module, and the example scripts, import it through this function, so that a
    missing matplotlib raises one message that names the command installing it.

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        If matplotlib is not installed; the message gives the ``pip`` command.

    Examples
    --------
    >>> from sknd.plotting import pyplot
    >>> plt = pyplot()
    >>> plt.__name__
    'matplotlib.pyplot'
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "sknd.plotting needs matplotlib, which is an optional dependency: "
            "install it with pip install matplotlib "
            '(or, in the sknd checkout, pip install -e ".[plot]").'
        ) from exc
    return plt


def _axes(ax, height=None):
    """``ax``, or the Axes of a new figure (``height`` inches high, matplotlib's default
    when None) whose constrained layout keeps long or rotated tick labels inside it."""
    plt = pyplot()
    if ax is None:
        width, default_height = plt.rcParams["figure.figsize"]
        _, ax = plt.subplots(figsize=(width, height or default_height), layout="constrained")
    return ax


def _log2_ratios(estimator):
    """Pairs of the ND layer and log2 of their learned weighting k (of
    :func:`~sknd._data._validation.fitted_indices`' reading of the model)."""
    pairs = np.asarray(estimator.pairs_, dtype=np.intp).reshape(-1, 2)
    if len(pairs) == 0:
        raise ValueError(
            "The estimator has no normalized-difference layer (architecture='mlp'?): "
            "there are no coefficients to plot."
        )
    a = np.asarray(estimator.coef_a_, dtype=np.float64).ravel()
    c = np.asarray(estimator.coef_c_, dtype=np.float64).ravel()
    return pairs, (log_softplus(a) - log_softplus(c)) / np.log(2.0)


# Ratios worth a tick on short scales; longer scales use powers of two. The
# reciprocals are labelled "1/r".
_NICE_RATIOS = (1.1, 1.25, 1.5, 2, 3, 4)


def _ratio_ticks(half_range, max_per_side=4):
    """Tick positions (log2 k) at round ratios within +-half_range, and labels."""
    if half_range > 2:
        step = int(np.ceil(half_range / max_per_side))
        ratios = [2.0**m for m in range(step, int(np.floor(half_range)) + 1, step)]
    else:
        ratios = [r for r in _NICE_RATIOS if np.log2(r) <= half_range + 1e-12]
        ratios = ratios[-max_per_side:] or [float(f"{2.0**half_range:.3g}")]
    positions = [-np.log2(r) for r in ratios[::-1]] + [0.0] + [np.log2(r) for r in ratios]
    labels = [f"1/{r:g}" for r in ratios[::-1]] + ["1"] + [f"{r:g}" for r in ratios]
    return positions, labels


# Room between neighbouring tick labels, in points.
_LABEL_GAP = 2.0


def _label_size(axis):
    """Font size (points) of the axis' tick labels."""
    # One tick, made with the axis' tick settings (asking for all ticks would call the
    # locator that asks for this size).
    return axis.get_major_ticks(1)[0].label1.get_fontsize()


def _text_width(text, size):
    """Width in points of ``text`` at font size ``size``."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _, _ = TextToPath().get_text_width_height_descent(
        text, FontProperties(size=size), ismath=False
    )
    return width


def _points_per_unit(axis):
    """Display length (points) of one data unit along the axis, as currently laid out."""
    ax = axis.axes
    if axis.axis_name == "x":
        a, b = ax.transData.transform([(0.0, 0.0), (1.0, 0.0)])[:, 0]
    else:
        a, b = ax.transData.transform([(0.0, 0.0), (0.0, 1.0)])[:, 1]
    return abs(b - a) * 72.0 / ax.figure.dpi


def _labels_fit(axis, positions, labels, rotated=False):
    """Whether tick labels at ``positions`` would leave room between neighbours."""
    if len(positions) < 2:
        return True
    size = _label_size(axis)
    if axis.axis_name == "y" or rotated:  # labels stacked along the axis: one line each
        extents = [1.2 * size] * len(labels)
    else:
        extents = [_text_width(label, size) for label in labels]
    scale = _points_per_unit(axis)
    gaps = np.diff(np.sort(positions)) * scale
    needed = (np.array(extents[:-1]) + np.array(extents[1:])) / 2 + _LABEL_GAP
    return bool(np.all(gaps >= needed))


def _ratio_locator(half_range):
    """Ticks at round ratios k, as many per side (4 at most) as leave room for the labels.

    The choice is made at draw time, from the axis' size on the final layout.
    """
    from matplotlib.ticker import Locator

    class RatioLocator(Locator):
        def candidates(self):
            for per_side in (4, 3, 2, 1):
                yield _ratio_ticks(half_range, per_side)
            positions, labels = _ratio_ticks(half_range, 1)
            yield [positions[0], positions[-1]], [labels[0], labels[-1]]
            yield [0.0], ["1"]

        def __call__(self):
            for positions, labels in self.candidates():
                if _labels_fit(self.axis, positions, labels):
                    return positions
            return [0.0]

    return RatioLocator()


def _set_ratio_ticks(axis, half_range):
    from matplotlib.ticker import FixedLocator, FuncFormatter

    names = {}
    for per_side in (4, 3, 2, 1):
        positions, labels = _ratio_ticks(half_range, per_side)
        names.update({round(p, 9): text for p, text in zip(positions, labels)})
    axis.set_major_locator(_ratio_locator(half_range))
    axis.set_major_formatter(FuncFormatter(lambda x, pos: names.get(round(x, 9), "")))
    axis.set_minor_locator(FixedLocator([]))


def _set_band_ticks(axis, names, rotate):
    """One tick per band, or every m-th band when one label per band would not fit."""
    from matplotlib.ticker import FuncFormatter, Locator

    n = len(names)

    class BandLocator(Locator):
        def __call__(self):
            size = _label_size(axis)
            if axis.axis_name == "y" or rotate:
                extent = 1.2 * size
            else:
                extent = max(_text_width(name, size) for name in names)
            step = int(np.ceil((extent + _LABEL_GAP) / max(_points_per_unit(axis), 1e-9)))
            return list(range(0, n, max(step, 1)))

    axis.set_major_locator(BandLocator())
    axis.set_major_formatter(
        FuncFormatter(lambda x, pos: names[int(round(x))] if 0 <= round(x) < n else "")
    )


def plot_coefficient_matrix(
    estimator, ax=None, *, mirror=False, annotate=False, cmap="RdBu_r", colorbar=True
):
    """Draw the learned weighting of every band pair as a band x band matrix.

    Cell ``(i, j)`` shows ``k = softplus(a_ij) / softplus(c_ij)`` of the index
    ``(w_i b_i - w_j b_j) / (w_i b_i + w_j b_j + epsilon)`` on a log scale:
    red where band ``i`` (row) is upweighted, blue where band ``j`` (column)
    is, white at ``k = 1``. Pairs the model does not have are left blank.

    Parameters
    ----------
    estimator : fitted sknd estimator or torch.nn.Module
        Any estimator with an ND layer (all of its pairs are shown, also for
        an ``NDTransformer`` that outputs only some of them), or a torch
        module holding a :class:`sknd.nn.NormalizedDifference` (see
        :func:`sknd.inspection.index_table`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when None.
    mirror : bool, default=False
        Also fill cell ``(j, i)`` with ``1/k``, so that each row reads as "how
        strongly this band is weighted against each other band".
    annotate : bool, default=False
        Write the value of ``k`` in each cell.
    cmap : str, default="RdBu_r"
        Diverging colormap, red for high values.
    colorbar : bool, default=True
        Add a colour bar labelled in ``k``.

    Returns
    -------
    ax : matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sknd.plotting import plot_coefficient_matrix
    >>> model = SimpleNamespace(
    ...     n_features_in_=3, bands=["B4", "B8", "B11"], sensor="sentinel2",
    ...     pairs_=np.array([[0, 1], [0, 2], [1, 2]]), coef_a_=np.array([1.0, 0.0, -1.0]),
    ...     coef_c_=np.zeros(3), index_importances_=np.ones(3), epsilon=1e-6,
    ...     variant="reflectance")
    >>> ax = plot_coefficient_matrix(model)
    """
    pyplot()
    import matplotlib as mpl
    from matplotlib.colors import TwoSlopeNorm

    estimator = fitted_indices(estimator)
    pairs, log2k = _log2_ratios(estimator)
    names = [band.name for band in get_bands(estimator)]
    n = len(names)
    matrix = np.full((n, n), np.nan)
    for (i, j), value in zip(pairs, log2k):
        matrix[i, j] = value
    if mirror:
        for (i, j), value in zip(pairs, log2k):
            if np.isnan(matrix[j, i]):
                matrix[j, i] = -value

    ax = _axes(ax)
    half_range = max(float(np.nanmax(np.abs(log2k))), _MIN_LOG2_RANGE)
    # Pairs the model lacks stay transparent.
    colormap = mpl.colormaps[cmap].with_extremes(bad=(1.0, 1.0, 1.0, 0.0))
    image = ax.imshow(
        np.ma.masked_invalid(matrix),
        cmap=colormap,
        norm=TwoSlopeNorm(vmin=-half_range, vcenter=0.0, vmax=half_range),
    )
    # Long or many names: rotated x labels and a smaller font; every m-th band is labelled
    # where one label per band would overlap (decided at draw time, see _set_band_ticks).
    rotate = n > 6 or max(len(name) for name in names) > 4
    size = "small" if n > 12 else None
    size = "x-small" if n > 24 else size
    if size is not None:
        ax.tick_params(labelsize=size)
    ax.tick_params(axis="x", labelrotation=90 if rotate else 0)
    _set_band_ticks(ax.xaxis, names, rotate)
    _set_band_ticks(ax.yaxis, names, rotate)
    ax.set_xlabel("band j (upweighted in blue)")
    ax.set_ylabel("band i (upweighted in red)")
    ax.set_title("Learned band weighting k = sp(a) / sp(c)")
    if annotate:
        for i, j in zip(*np.nonzero(~np.isnan(matrix))):
            value = matrix[i, j]
            ax.text(
                j,
                i,
                f"{2.0**value:.2g}",
                ha="center",
                va="center",
                fontsize="x-small",
                color="white" if abs(value) > 0.6 * half_range else "black",
            )
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax)
        _set_ratio_ticks(bar.ax.yaxis, half_range)
        bar.set_label("k (log scale; 1 = classic index)")
    return ax


def plot_top_asymmetric_pairs(estimator, k=15, ax=None):
    """Bar chart of the band pairs whose learned weighting is furthest from 1.

    Pairs are ranked by ``|log k|`` with ``k = softplus(a) / softplus(c)``, so
    that ``k = 4`` and ``k = 1/4`` are equally asymmetric. Bars to the right
    (red) upweight the first band of the label, bars to the left (blue) the
    second; labels name the classic index a pair forms, if any.

    Parameters
    ----------
    estimator : fitted sknd estimator or torch.nn.Module
        Any estimator with an ND layer, or a torch module holding a
        :class:`sknd.nn.NormalizedDifference` (see
        :func:`sknd.inspection.index_table`).
    k : int, default=15
        Number of pairs to show.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when None.

    Returns
    -------
    ax : matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sknd.plotting import plot_top_asymmetric_pairs
    >>> model = SimpleNamespace(
    ...     n_features_in_=3, bands=["B4", "B8", "B11"], sensor="sentinel2",
    ...     pairs_=np.array([[0, 1], [0, 2], [1, 2]]), coef_a_=np.array([1.0, 0.0, -1.0]),
    ...     coef_c_=np.zeros(3), index_importances_=np.ones(3), epsilon=1e-6,
    ...     variant="reflectance")
    >>> [t.get_text() for t in plot_top_asymmetric_pairs(model, k=2).get_yticklabels()]
    ['B8 : B11  (NDMI, -NDBI)', 'B4 : B8  (-NDVI)']
    """
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}.")
    pyplot()
    estimator = fitted_indices(estimator)
    pairs, log2k = _log2_ratios(estimator)
    bands = get_bands(estimator)
    # Stable sort: ties keep the ND layer's order.
    order = np.argsort(-np.abs(log2k), kind="stable")[:k]
    labels = []
    named = why_no_known_indices(estimator) is None  # bands as measured (sknd.indices)
    for i, j in pairs[order]:
        label = f"{bands[i].name} : {bands[j].name}"
        known = known_index(bands[i], bands[j]) if named else ""
        labels.append(f"{label}  ({known})" if known else label)
    values = log2k[order]

    # A new figure grows with the bars, one line of label each (15 fit matplotlib's default).
    ax = _axes(ax, height=max(4.8, 1.6 + 0.22 * len(order)))
    positions = np.arange(len(order))
    colors = np.where(values >= 0, "tab:red", "tab:blue")
    ax.barh(positions, values, color=colors)
    ax.set_yticks(positions, labels)
    ax.invert_yaxis()  # most asymmetric on top
    ax.axvline(0.0, color="black", linewidth=0.8)
    half_range = max(float(np.max(np.abs(values))), _MIN_LOG2_RANGE) * 1.1
    ax.set_xlim(-half_range, half_range)
    _set_ratio_ticks(ax.xaxis, half_range)
    ax.set_xlabel("k = sp(a) / sp(c)  (log scale; > 1: first band upweighted)")
    ax.set_title(f"Top {len(order)} most asymmetric band pairs")
    return ax


def plot_training_curves(estimator, ax=None):
    """Plot training and validation loss, and the validation score, per epoch.

    Parameters
    ----------
    estimator : fitted sknd estimator
        Reads ``history_`` (columns ``epoch``, ``train_loss``, ``valid_loss``,
        ``valid_score``) and ``best_epoch_`` when present.
    ax : matplotlib.axes.Axes, optional
        Axes for the losses; the validation score goes on a twin y-axis.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes holding the losses.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> from sknd.plotting import plot_training_curves
    >>> history = pd.DataFrame({"epoch": [1, 2, 3], "train_loss": [1.0, 0.6, 0.5],
    ...                         "valid_loss": [1.1, 0.7, 0.65],
    ...                         "valid_score": [0.5, 0.7, 0.75]})
    >>> ax = plot_training_curves(SimpleNamespace(history_=history, best_epoch_=3))
    """
    pyplot()
    history = getattr(estimator, "history_", None)
    if history is None:
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"This {type(estimator).__name__} instance has no history_; fit it first."
        )
    ax = _axes(ax)
    epochs = np.asarray(history["epoch"])
    handles = ax.plot(epochs, history["train_loss"], color="tab:blue", label="training loss")
    if "valid_loss" in history and history["valid_loss"].notna().any():
        handles += ax.plot(
            epochs, history["valid_loss"], color="tab:orange", label="validation loss"
        )
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    if "valid_score" in history and history["valid_score"].notna().any():
        score_ax = ax.twinx()
        handles += score_ax.plot(
            epochs,
            history["valid_score"],
            color="tab:green",
            linestyle="--",
            label="validation score",
        )
        score_ax.set_ylabel("validation score")
    best_epoch = getattr(estimator, "best_epoch_", None)
    if best_epoch is not None:
        handles.append(
            ax.axvline(best_epoch, color="grey", linestyle=":", label=f"best epoch ({best_epoch})")
        )
    # Above the plot, never over a curve: "best" inside would weigh the losses' Axes only,
    # not the validation score on the twin Axes. Two entries a row; the title above them.
    from matplotlib.font_manager import FontProperties

    legend = ax.legend(
        handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, frameon=False
    )
    size = FontProperties(size=legend.get_texts()[0].get_fontsize()).get_size_in_points()
    rows = -(-len(handles) // 2)
    ax.set_title("Training curves", pad=rows * 1.6 * size + 10)
    return ax


def plot_noise_robustness(results, ax=None, *, x="noise", y=None, hue="model"):
    """Plot a score against the input noise level, one line per model.

    Parameters
    ----------
    results : pandas.DataFrame
        One row per evaluation with columns ``noise`` (e.g. the standard
        deviation of multiplicative noise as a fraction), a score and,
        optionally, ``model``: what :func:`sknd.experiments.noise_robustness`
        returns (``accuracy`` for a classifier, ``r2`` and ``rmse`` for a
        regressor) or the ``results.csv`` of ``python -m sknd.experiments``.
        Repeated rows (folds, seeds) are averaged and their standard deviation
        is shaded.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made when None.
    x : str, default="noise"
        Column of the noise level.
    y : str, default=None
        Column of the score; None takes the first of ``accuracy``, ``r2`` and
        ``rmse`` that ``results`` has.
    hue : str, default="model"
        Column that names the lines.

    Returns
    -------
    ax : matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from sknd.plotting import plot_noise_robustness
    >>> results = pd.DataFrame({"noise": [0.0, 0.05, 0.1] * 2,
    ...                         "accuracy": [0.95, 0.95, 0.94, 0.95, 0.93, 0.90],
    ...                         "model": ["ND"] * 3 + ["MLP"] * 3})
    >>> [t.get_text() for t in plot_noise_robustness(results).get_legend().get_texts()]
    ['ND', 'MLP']
    """
    import pandas as pd

    pyplot()
    from matplotlib.ticker import PercentFormatter

    if not isinstance(results, pd.DataFrame):
        raise TypeError("results must be a pandas DataFrame.")
    if y is None:
        y = next((c for c in _SCORES if c in results.columns and results[c].notna().any()), None)
        if y is None:
            raise ValueError(
                f"results has none of the score columns {list(_SCORES)} (it has "
                f"{list(results.columns)}): name the score column with y=."
            )
    missing = [column for column in (x, y) if column not in results.columns]
    if missing:
        raise ValueError(f"results lacks the column(s) {missing}; it has {list(results.columns)}.")
    ax = _axes(ax)
    groups = results.groupby(hue, sort=False) if hue in results.columns else [(None, results)]
    for name, group in groups:
        stats = group.groupby(x, sort=True)[y].agg(["mean", "std"])
        levels = stats.index.to_numpy(dtype=float)
        (line,) = ax.plot(levels, stats["mean"], marker="o", label=name)
        spread = stats["std"].fillna(0.0).to_numpy()
        if np.any(spread > 0):
            ax.fill_between(
                levels,
                stats["mean"] - spread,
                stats["mean"] + spread,
                color=line.get_color(),
                alpha=0.2,
            )
    if len(results) and results[x].max() <= 1:
        ax.xaxis.set_major_formatter(PercentFormatter(xmax=1))
    ax.set_xlabel("noise level")
    ax.set_ylabel(_SCORE_NAMES.get(y, y))
    if hue in results.columns:
        ax.legend(title=hue)
    ax.set_title(f"{_SCORE_NAMES.get(y, y)} under input noise")
    return ax
