"""The report's PNG figures (matplotlib is imported lazily: it is an optional dependency)."""

from pathlib import Path

import numpy as np

from ._protocol import DEPTH_MODELS, MODEL_LABELS, MODELS, PAPER_MODELS
from ._tables import parameter_table

# One colour per model, stable across all figures.
_COLORS = dict(zip(MODELS, ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7"]))


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The experiment figures need matplotlib: pip install 'sknd[plot]'."
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


def _present(results, candidates):
    return [m for m in candidates if m in set(results["model"])]


def _depthless(results):
    return [m for m in MODELS if m not in DEPTH_MODELS and m in set(results["model"])]


def plot_accuracy_by_depth(results, ax=None):
    """Grouped bars of clean test accuracy (mean +- std over folds) per depth and model.

    Models without a depth (logistic regressions, best ND pair, random forest) are drawn as
    horizontal dotted lines at their mean accuracy.
    """
    fig, ax = _axes(ax, figsize=(9, 4.2))
    clean = results[np.isclose(results["noise"], results["noise"].min())]
    models = _present(clean, DEPTH_MODELS)
    depths = sorted(clean["depth"].dropna().unique())
    width = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        stats = clean[clean["model"] == model].groupby("depth")["accuracy"].agg(["mean", "std"])
        stats = stats.reindex(depths) * 100
        positions = np.arange(len(depths)) + (k - (len(models) - 1) / 2) * width
        ax.bar(
            positions,
            stats["mean"],
            width,
            yerr=stats["std"],
            capsize=3,
            color=_COLORS[model],
            label=MODEL_LABELS[model],
        )
    for model in _depthless(clean):
        mean = clean.loc[clean["model"] == model, "accuracy"].mean() * 100
        ax.axhline(
            mean,
            color=_COLORS[model],
            linestyle=":",
            linewidth=1.5,
            label=f"{MODEL_LABELS[model]} (no depth)",
        )
    ax.set_xticks(np.arange(len(depths)), [str(int(d)) for d in depths])
    ax.set_xlabel("depth (layers, input to output)")
    ax.set_ylabel("test accuracy (%)")
    low = (clean["accuracy"].min() * 100) if len(clean) else 0
    ax.set_ylim(max(0, low - 5), 100)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("Test accuracy by depth (error bars: std over folds)")
    return fig


def _bars_by_depth(table, column, ylabel, title, ax, log, fmt):
    fig, ax = _axes(ax)
    models = _present(table, DEPTH_MODELS)
    depths = sorted(table["depth"].dropna().unique())
    width = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        values = table[table["model"] == model].set_index("depth")[column].reindex(depths)
        positions = np.arange(len(depths)) + (k - (len(models) - 1) / 2) * width
        bars = ax.bar(positions, values, width, color=_COLORS[model], label=MODEL_LABELS[model])
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
    """Bars of efficiency (accuracy % per 100 parameters) per depth and model (log scale)."""
    return _bars_by_depth(
        parameter_table(results),
        "efficiency",
        "accuracy (%) per 100 parameters",
        "Parameter efficiency",
        ax,
        log=True,
        fmt="{:.3g}",
    )


def _curve_panels(frame, x, y, xlabel, ylabel, title, logx=False):
    """One panel per depth (depth models) plus one for the models without depth."""
    plt = _pyplot()
    depths = sorted(frame["depth"].dropna().unique())
    depthless = _depthless(frame)
    n_panels = len(depths) + bool(depthless)
    fig, axes = plt.subplots(
        1, n_panels, figsize=(4.2 * n_panels, 3.8), sharey=True, layout="constrained", squeeze=False
    )
    panels = [
        (f"depth {int(d)}", frame[frame["depth"] == d], _present(frame, DEPTH_MODELS))
        for d in depths
    ]
    if depthless:
        panels.append(("peers without depth", frame[frame["depth"].isna()], depthless))
    for ax, (name, rows, models) in zip(axes[0], panels):
        for model in models:
            stats = rows[rows["model"] == model].groupby(x)[y].agg(["mean", "std"]) * 100
            ax.errorbar(
                stats.index * (100 if x == "noise" else 1),
                stats["mean"],
                yerr=stats["std"],
                marker="o",
                capsize=3,
                color=_COLORS[model],
                label=MODEL_LABELS[model],
            )
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        if logx:
            _plain_log_axis(ax.xaxis, ticks=sorted(frame[x].unique()))
        ax.legend(fontsize="x-small")
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(title)
    return fig


def plot_noise_curves(results):
    """Test accuracy against the multiplicative noise level, one panel per depth."""
    return _curve_panels(
        results,
        "noise",
        "accuracy",
        "noise level eta (%)",
        "test accuracy (%)",
        "Accuracy under noise b + eta |b| z (mean +- std over folds)",
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
    for model in _present(rows, PAPER_MODELS):
        h = rows[rows["model"] == model]
        color, label = _COLORS[model], MODEL_LABELS[model]
        left.plot(h["epoch"], h["valid_score"] * 100, color=color, label=label)
        right.plot(h["epoch"], h["train_loss"], color=color, label=f"{label} train")
        right.plot(
            h["epoch"], h["valid_loss"], color=color, linestyle="--", label=f"{label} validation"
        )
    left.set_xlabel("epoch")
    left.set_ylabel("validation accuracy (%)")
    left.legend(fontsize="small")
    right.set_xlabel("epoch")
    right.set_ylabel("loss")
    _plain_log_axis(right.yaxis, subs=(1.0, 2.0, 5.0))
    right.legend(fontsize="x-small", ncols=2)
    fig.suptitle(f"Training dynamics at depth {depth} (fold {fold})")
    return fig


def plot_coefficients(estimator, k=15):
    """Top-k asymmetric pairs (left) and the full ratio matrix (right) of an ND model.

    Both panels are drawn by :mod:`sknd.plotting` (``plot_top_asymmetric_pairs`` and
    ``plot_coefficient_matrix``), so the report looks like the user guide's figures.
    """
    from ..plotting import plot_coefficient_matrix, plot_top_asymmetric_pairs

    plt = _pyplot()
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, 5.5), layout="constrained", width_ratios=[1, 1.15]
    )
    plot_top_asymmetric_pairs(estimator, k=k, ax=left)
    plot_coefficient_matrix(estimator, ax=right)
    return fig


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
    plt = _pyplot()
    output_dir = Path(output_dir)
    results, written = experiment.results, []

    def save(fig, name, caption):
        fig.savefig(output_dir / name, dpi=dpi)
        plt.close(fig)
        written.append((name, caption))

    save(
        plot_accuracy_by_depth(results),
        "accuracy_by_depth.png",
        "Test accuracy by depth, mean and std over folds.",
    )
    save(plot_parameters(results), "parameters.png", "Trainable parameters.")
    save(plot_efficiency(results), "efficiency.png", "Accuracy (%) per 100 parameters.")
    save(
        plot_noise_curves(results),
        "noise.png",
        "Test accuracy under multiplicative noise, one panel per depth.",
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
                f"Training dynamics at depth {depth} (fold 0): validation accuracy; training "
                "(solid) and validation (dashed) loss.",
            )
        estimator = experiment.estimators.get(("nd", depth, 0))
        if estimator is not None and len(estimator.pairs_):
            save(
                plot_coefficients(estimator),
                f"coefficients_depth{depth}.png",
                f"Learned ND coefficients at depth {depth} (fold 0): top 15 asymmetric pairs "
                "by sp(a)/sp(c), and the full ratio matrix.",
            )
    return written
