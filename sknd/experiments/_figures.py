"""The report's PNG figures (matplotlib is imported lazily: it is an optional dependency)."""

from contextvars import ContextVar
from pathlib import Path

import numpy as np

from ._protocol import MODEL_LABELS
from ._specs import MODEL_SPECS
from ._tables import main_metric, noise_kinds, one_kind, parameter_table

# One colour per model of the table, stable across all figures and tasks.
_ORDER = [spec.name for spec in MODEL_SPECS]
# The twin peers of the two tasks share a colour; later rows of the table (PLS, new
# network rows) take the remaining ones.
_COLORS = {
    "nd": "C0",
    "mlp": "C1",
    "attnd": "C2",
    "sklearn_mlp": "C3",
    "logreg_bands": "C4",
    "ridge_bands": "C4",
    "logreg_nd": "C5",
    "ridge_nd": "C5",
    "best_nd_pair": "C6",
    "random_forest": "C7",
}
_SPARE = ["C8", "C9", "navy", "maroon", "olive", "teal"]
for _k, _name in enumerate(n for n in _ORDER if n not in _COLORS):
    _COLORS[_name] = _SPARE[_k % len(_SPARE)]
_NETWORKS = [spec.name for spec in MODEL_SPECS if spec.network]
_AXIS = {"accuracy": ("test accuracy (%)", 100), "r2": ("test R²", 1), "rmse": ("test RMSE", 1)}


def _color(model):
    return _COLORS.get(model, "grey")


# The labels of the run being drawn (rows given as specs outside the table included).
_LABELS = ContextVar("labels", default=MODEL_LABELS)


def _label(model):
    return _LABELS.get().get(model, model)


def _models(frame):
    """Models of ``frame`` in table order (unknown rows last)."""
    present = list(dict.fromkeys(frame["model"]))
    return [m for m in _ORDER if m in present] + [m for m in present if m not in _ORDER]


def _depth_models(frame):
    with_depth = set(frame.loc[frame["depth"].notna(), "model"])
    return [m for m in _models(frame) if m in with_depth]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The experiment figures need matplotlib: pip install matplotlib "
            "(or, in the sknd checkout, pip install -e '.[plot]')."
        ) from exc
    return plt


def _axes(ax, figsize=(6.4, 4.2)):
    if ax is not None:
        return ax.figure, ax
    fig, ax = _pyplot().subplots(figsize=figsize, layout="constrained")
    return fig, ax


def _plain_log_axis(axis, ticks=None, subs=(1.0,)):
    """Log scale labelled with plain numbers ("20", not "2 x 10^1")."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    if axis.axis_name == "x":
        axis.axes.set_xscale("log")
    else:
        axis.axes.set_yscale("log")
    locator = FixedLocator(ticks) if ticks is not None else LogLocator(subs=subs)
    axis.set_major_locator(locator)
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _depthless(results):
    with_depth = set(_depth_models(results))
    return [m for m in _models(results) if m not in with_depth]


def plot_accuracy_by_depth(results, ax=None):
    """Grouped bars of the clean test score (mean +- std over folds) per depth and model.

    The score is the accuracy (regression: R²). Models without a depth (linear models,
    best ND pair, random forest) are drawn as horizontal dotted lines at their mean score.
    """
    fig, ax = _axes(ax, figsize=(9, 4.2))
    metric = main_metric(results)
    ylabel, scale = _AXIS[metric]
    results = one_kind(results)  # a run of both noise models holds the clean rows twice
    clean = results[np.isclose(results["noise"], results["noise"].min())]
    models = _depth_models(clean)
    depths = sorted(clean["depth"].dropna().unique())
    width = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        stats = clean[clean["model"] == model].groupby("depth")[metric].agg(["mean", "std"])
        stats = stats.reindex(depths) * scale
        positions = np.arange(len(depths)) + (k - (len(models) - 1) / 2) * width
        ax.bar(
            positions,
            stats["mean"],
            width,
            yerr=stats["std"],
            capsize=3,
            color=_color(model),
            label=_label(model),
        )
    for model in _depthless(clean):
        mean = clean.loc[clean["model"] == model, metric].mean() * scale
        ax.axhline(
            mean,
            color=_color(model),
            linestyle=":",
            linewidth=1.5,
            label=f"{_label(model)} (no depth)",
        )
    ax.set_xticks(np.arange(len(depths)), [str(int(d)) for d in depths])
    ax.set_xlabel("depth (layers, input to output)")
    ax.set_ylabel(ylabel)
    if metric == "accuracy":
        low = (clean[metric].min() * 100) if len(clean) else 0
        ax.set_ylim(max(0, low - 5), 100)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"{ylabel[5:].capitalize()} by depth (error bars: std over folds)")
    return fig


def _bars_by_depth(table, column, ylabel, title, ax, log, fmt):
    fig, ax = _axes(ax)
    models = _depth_models(table)
    depths = sorted(table["depth"].dropna().unique())
    width = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        values = table[table["model"] == model].set_index("depth")[column].reindex(depths)
        positions = np.arange(len(depths)) + (k - (len(models) - 1) / 2) * width
        bars = ax.bar(positions, values, width, color=_color(model), label=_label(model))
        ax.bar_label(bars, fmt=fmt, fontsize="x-small")
    ax.set_xticks(np.arange(len(depths)), [str(int(d)) for d in depths])
    ax.set_xlabel("depth (layers, input to output)")
    ax.set_ylabel(ylabel)
    if log:
        _plain_log_axis(ax.yaxis, subs=(1.0, 2.0, 5.0))
    ax.legend(fontsize="small")
    ax.set_title(title)
    return fig


def plot_parameters(results, ax=None):
    """Bars of trainable parameter counts per depth and model (log scale)."""
    return _bars_by_depth(
        parameter_table(results),
        "n_parameters",
        "trainable parameters",
        "Parameter count",
        ax,
        log=True,
        fmt="{:,.0f}",
    )


def plot_efficiency(results, ax=None):
    """Bars of efficiency (score per 100 parameters) per depth and model (log scale)."""
    metric = main_metric(results)
    return _bars_by_depth(
        parameter_table(results),
        "efficiency",
        f"{_AXIS[metric][0][5:]} per 100 parameters",
        "Parameter efficiency",
        ax,
        log=True,
        fmt="{:.3g}",
    )


def _curve_panels(frame, x, y, xlabel, ylabel, title, logx=False, scale=100):
    """One panel per depth (depth models) plus one for the models without depth."""
    plt = _pyplot()
    depths = sorted(frame["depth"].dropna().unique())
    depthless = _depthless(frame)
    n_panels = len(depths) + bool(depthless)
    fig, axes = plt.subplots(
        1, n_panels, figsize=(4.2 * n_panels, 3.8), sharey=True, layout="constrained", squeeze=False
    )
    panels = [(f"depth {int(d)}", frame[frame["depth"] == d], _depth_models(frame)) for d in depths]
    if depthless:
        panels.append(("peers without depth", frame[frame["depth"].isna()], depthless))
    for ax, (name, rows, models) in zip(axes[0], panels):
        for model in models:
            stats = rows[rows["model"] == model].groupby(x)[y].agg(["mean", "std"]) * scale
            ax.errorbar(
                stats.index * (100 if x == "noise" else 1),
                stats["mean"],
                yerr=stats["std"],
                marker="o",
                capsize=3,
                color=_color(model),
                label=_label(model),
            )
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        if logx:
            _plain_log_axis(ax.xaxis, ticks=sorted(frame[x].unique()))
        ax.legend(fontsize="x-small")
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(title)
    return fig


#: How the noise figures name each noise model.
_NOISE_TITLES = {"multiplicative": "b + eta |b| z", "additive": "additive noise b + eta s z"}


def plot_noise_curves(results, kind=None):
    """Test score against the noise level, one panel per depth.

    ``kind`` picks the noise model of a run of both (default: the paper's multiplicative).
    """
    metric = main_metric(results)
    ylabel, scale = _AXIS[metric]
    kinds = noise_kinds(results)
    kind = kind or (kinds[0] if kinds else "multiplicative")
    return _curve_panels(
        one_kind(results, kind if kinds else None),
        "noise",
        metric,
        "noise level eta (%)",
        ylabel,
        f"{ylabel[5:].capitalize()} under noise {_NOISE_TITLES[kind]} (mean +- std over folds)",
        scale=scale,
    )


def plot_illumination(illumination):
    """Agreement with the unscaled predictions when all bands are multiplied by k."""
    return _curve_panels(
        illumination,
        "factor",
        "agreement",
        "illumination factor k",
        "predictions unchanged (%)",
        "Illumination check: all bands times k",
        logx=True,
    )


def plot_training_curves(histories, depth, fold=0):
    """Validation accuracy (left) and training/validation loss (right) of one fold."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    rows = histories[(histories["depth"] == depth) & (histories["fold"] == fold)]
    for model in [m for m in _models(rows) if m in _NETWORKS or m not in _ORDER]:
        h = rows[rows["model"] == model]
        color, label = _color(model), _label(model)
        left.plot(h["epoch"], h["valid_score"] * 100, color=color, label=label)
        right.plot(h["epoch"], h["train_loss"], color=color, label=f"{label} train")
        right.plot(
            h["epoch"], h["valid_loss"], color=color, linestyle="--", label=f"{label} validation"
        )
    left.set_xlabel("epoch")
    left.set_ylabel("validation score (%)")
    left.legend(fontsize="small")
    right.set_xlabel("epoch")
    right.set_ylabel("loss")
    _plain_log_axis(right.yaxis, subs=(1.0, 2.0, 5.0))
    right.legend(fontsize="x-small", ncols=2)
    fig.suptitle(f"Training dynamics at depth {depth} (fold {fold})")
    return fig


def plot_coefficients(estimator, k=15, title=None):
    """Top-k asymmetric pairs (left) and the full ratio matrix (right) of an ND model.

    Both panels are drawn by :mod:`sknd.plotting` (``plot_top_asymmetric_pairs`` and
    ``plot_coefficient_matrix``), so the report looks like the user guide's figures;
    ``title`` names the model and recipe they show.
    """
    from ..plotting import plot_coefficient_matrix, plot_top_asymmetric_pairs

    plt = _pyplot()
    # Room for one readable tick label per band in the matrix (36 for satimage), up to 40
    # bands; beyond, the matrix labels every few bands (sknd.plotting) on a page-sized figure.
    height = min(max(5.5, 0.22 * estimator.n_features_in_), 8.8)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(5 + height * 1.45, height), layout="constrained", width_ratios=[1, 1.15]
    )
    plot_top_asymmetric_pairs(estimator, k=k, ax=left)
    plot_coefficient_matrix(estimator, ax=right)
    if title:
        fig.suptitle(title)
    return fig


#: The rows whose learned indices the report draws, the default recipe's first: what a
#: user fits, whose k stay near 1; then the paper's recipe, whose k move further.
_COEFFICIENT_MODELS = {
    "nd_sknd": "sknd's default recipe",
    "nd": "the paper's recipe",
}


def _report_depths(depths):
    """Depths 2 and 4 as in the paper, else the shallowest and the deepest."""
    if 2 in depths and 4 in depths:
        return [2, 4]
    return sorted({min(depths), max(depths)})


def save_figures(experiment, output_dir, dpi=120):
    """Write all figures of a run as PNG files.

    Returns
    -------
    figures : list of (str, str)
        File name (relative to ``output_dir``) and caption of each figure written.
    """
    labels = {**MODEL_LABELS, **experiment.settings.get("model_labels", {})}
    token = _LABELS.set(labels)
    try:
        return _save_figures(experiment, Path(output_dir), dpi)
    finally:
        _LABELS.reset(token)


def _save_figures(experiment, output_dir, dpi):
    plt = _pyplot()
    results, written = experiment.results, []

    def save(fig, name, caption):
        fig.savefig(output_dir / name, dpi=dpi)
        plt.close(fig)
        written.append((name, caption))

    save(
        plot_accuracy_by_depth(results),
        "accuracy_by_depth.png",
        "Test score by depth, mean and std over folds.",
    )
    save(plot_parameters(results), "parameters.png", "Trainable parameters.")
    save(plot_efficiency(results), "efficiency.png", "Accuracy (%) per 100 parameters.")
    for kind in noise_kinds(results) or [experiment.settings.get("noise_kind", "multiplicative")]:
        save(
            plot_noise_curves(results, kind),
            "noise.png" if kind == "multiplicative" else f"noise_{kind}.png",
            f"Test score under {kind} noise, one panel per depth.",
        )
    if len(experiment.illumination):
        save(
            plot_illumination(experiment.illumination),
            "illumination.png",
            "Share of test predictions unchanged when all bands are multiplied by k.",
        )
    depths = sorted(results["depth"].dropna().unique())
    for depth in _report_depths([int(d) for d in depths]) if depths else []:
        if len(experiment.histories):
            save(
                plot_training_curves(experiment.histories, depth),
                f"training_depth{depth}.png",
                f"Training dynamics at depth {depth} (fold 0): validation score; training "
                "(solid) and validation (dashed) loss.",
            )
        for model, recipe in _COEFFICIENT_MODELS.items():
            estimator = experiment.estimators.get((model, depth, 0))
            if estimator is None or not len(estimator.pairs_):
                continue
            shown = f"{_label(model)} ({recipe}) at depth {depth}, fold 0"
            save(
                plot_coefficients(estimator, title=f"Learned indices: {shown}"),
                f"coefficients_{model}_depth{depth}.png",
                f"Learned indices of {shown}: the top 15 asymmetric pairs by "
                "k = sp(a)/sp(c), and the full matrix of k.",
            )
    return written
