"""Write an experiment's CSV files, figures and Markdown report to a directory."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ._protocol import MODEL_LABELS
from ._specs import FIXED_INDEX_BASELINE, MODEL_SPECS
from ._tables import (
    accuracy_table,
    main_metric,
    noise_drop_table,
    noise_kinds,
    one_kind,
    paired_ttest,
    parameter_table,
)

#: How each score is printed: name in headings, scale, decimals, and whether larger is better.
#: The report's formula of each noise model (sknd.experiments.NOISE_KINDS).
_NOISE_FORMULAS = {
    "multiplicative": "b + eta |b| z",
    "additive": "b + eta s z (s: each band's standard deviation on the training rows; "
    "clipped at 0)",
}
_FORMATS = {
    "accuracy": ("accuracy (%)", 100, 2),
    "r2": ("R²", 1, 3),
    "rmse": ("RMSE", 1, 4),
}


_TEST_NOTE = (
    "p: two-sided corrected resampled t-test over folds (Nadeau & Bengio 2003: the "
    "variance of the mean difference is (1/k + n_test/n_train) s² instead of s²/k, "
    "because the training sets of the folds overlap; the plain paired t-test "
    "overstates significance). Standard deviations use ddof=1."
)


def _pm(mean, std, metric="accuracy"):
    _, scale, digits = _FORMATS[metric]
    std = "n/a" if pd.isna(std) else f"{scale * std:.{digits}f}"
    return f"{scale * mean:.{digits}f} ± {std}"


def _score(value, metric):
    """A mean score as the report's text quotes it.

    >>> _score(0.81316, "accuracy"), _score(0.8912, "r2")
    ('81.32 %', 'R² 0.891')
    """
    _, scale, digits = _FORMATS[metric]
    text = f"{scale * value:.{digits}f}"
    return f"{text} %" if metric == "accuracy" else f"{_FORMATS[metric][0]} {text}"


def _eff(value):
    # Three significant digits without switching to scientific notation for large values.
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _p(value):
    if pd.isna(value):
        return "n/a"
    return f"{value:.3g}" if value >= 1e-3 else f"{value:.1e}"


def _markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class _Layout:
    """Which models the report shows, in which order, under which labels."""

    def __init__(self, experiment):
        s = experiment.settings
        results = experiment.results
        present = list(dict.fromkeys(results["model"]))
        table_order = [spec.name for spec in MODEL_SPECS]
        order = s.get("models") or table_order
        self.models = [m for m in order if m in present] + [m for m in present if m not in order]
        self.labels = {**MODEL_LABELS, **s.get("model_labels", {})}
        by_depth = set(results.loc[results["depth"].notna(), "model"])
        self.depth_models = [m for m in self.models if m in by_depth]
        self.peers = [m for m in self.models if m not in by_depth]
        default_networks = [spec.name for spec in MODEL_SPECS if spec.network]
        self.networks = [m for m in self.models if m in s.get("network_models", default_networks)]
        self.metric = main_metric(results)
        task = s.get("task") or ("classification" if self.metric == "accuracy" else "regression")
        self.task = task
        self.baseline = s.get("baseline") or FIXED_INDEX_BASELINE[task]
        # A run of both noise models has a noise_kind column; an older one names its one.
        self.kinds = noise_kinds(results) or [s.get("noise_kind", "multiplicative")]

    def label(self, model):
        return self.labels.get(model, model)


def _depths(results):
    return [int(d) for d in sorted(results["depth"].dropna().unique())]


def _table_scores(results, layout, metric):
    acc = accuracy_table(results, metric=metric)
    models = layout.depth_models
    comparisons = [o for o in ("mlp", "sklearn_mlp") if "nd" in models and o in models]
    tests = {
        other: paired_ttest(results, "nd", other, metric=metric).set_index("depth")["p_value"]
        for other in comparisons
    }
    header = ["Depth"] + [layout.label(m) for m in models]
    header += [f"p (ND vs {layout.label(o)}, corrected)" for o in tests]
    larger_is_better = metric != "rmse"
    rows = []
    for depth in _depths(results):
        at = acc[acc["depth"] == depth].set_index("model")
        means = at["mean"].reindex(models)
        best = means.max() if larger_is_better else means.min()
        cells = []
        for m in models:
            if m not in at.index:
                cells.append("")
                continue
            text = _pm(at.loc[m, "mean"], at.loc[m, "std"], metric)
            # Bold the best mean of the row, as in the paper.
            cells.append(f"**{text}**" if np.isclose(at.loc[m, "mean"], best) else text)
        rows.append([depth] + cells + [_p(t.get(depth, np.nan)) for t in tests.values()])
    return _markdown(header, rows)


def _table_peers(results, layout):
    if not layout.peers:
        return ""
    metric = layout.metric
    acc = accuracy_table(results).set_index("model")
    params = parameter_table(results).set_index("model")
    drops = [noise_drop_table(results, kind=kind).set_index("model") for kind in layout.kinds]
    clean = one_kind(results)
    clean = clean[np.isclose(clean["noise"], clean["noise"].min())]
    rmse = accuracy_table(results, metric="rmse").set_index("model") if metric == "r2" else None
    rows = []
    for m in layout.peers:
        note = ""
        if m == "best_nd_pair":
            pairs = clean.loc[clean["model"] == m, "selected_pair"].value_counts()
            note = "pairs: " + ", ".join(f"{p} ({n}x)" for p, n in pairs.head(3).items())
            note += "; parameters = model on the index" if metric == "r2" else ""
            note += "; parameters = tree nodes" if metric == "accuracy" else ""
        elif m == "random_forest":
            note = "parameters = tree nodes"
        elif m == layout.baseline:
            note = "fixed-index baseline"
        row = [layout.label(m), _pm(acc.loc[m, "mean"], acc.loc[m, "std"], metric)]
        if rmse is not None:
            row.append(_pm(rmse.loc[m, "mean"], rmse.loc[m, "std"], "rmse"))
        row += [f"{params.loc[m, 'n_parameters']:,.0f}", _eff(params.loc[m, "efficiency"])]
        row += [f"{d.loc[m, 'drop']:.{2 if metric == 'accuracy' else 3}f}" for d in drops]
        rows.append(row + [note])
    header = ["Model", _FORMATS[metric][0]] + (["RMSE"] if rmse is not None else [])
    unit = "(pp)" if metric == "accuracy" else "(R²)"
    # One noise model: "Noise drop" as ever; both: a column each, the paper's first.
    names = [f"{kind.capitalize()} drop {unit}" for kind in layout.kinds]
    header += ["Params", "Eff.", *(names if len(names) > 1 else [f"Noise drop {unit}"]), "Note"]
    return _markdown(header, rows)


def _diff(value, metric):
    _, scale, digits = _FORMATS[metric]
    return f"{scale * value:+.{digits}f}"


def _table_learning(results, layout):
    """Each network at each depth against the fixed-index baseline, paired by fold."""
    baseline = layout.baseline
    if baseline not in layout.models:
        return ""
    metric = layout.metric
    clean = one_kind(results)
    clean = clean[np.isclose(clean["noise"], clean["noise"].min())]
    gains = clean.groupby(["model", "depth"])["learning_gain"].mean()
    rows = []
    for model in layout.networks:
        tests = paired_ttest(results, model, baseline, metric=metric)
        for test in tests.itertuples(index=False):
            gain = gains.get((model, test.depth), np.nan)
            ci = f"[{_diff(test.ci_low, metric)}, {_diff(test.ci_high, metric)}]"
            if pd.isna(test.ci_low):
                ci = "n/a"
            rows.append(
                [
                    layout.label(model),
                    "" if pd.isna(test.depth) else int(test.depth),
                    _pm(test.mean_a, np.nan, metric).split(" ±")[0],
                    _pm(test.mean_b, np.nan, metric).split(" ±")[0],
                    _diff(test.difference, metric),
                    ci,
                    _p(test.p_value),
                    "n/a" if pd.isna(gain) else _diff(gain, metric),
                ]
            )
    if not rows:
        return ""
    unit = "pp" if metric == "accuracy" else "R²"
    header = [
        "Model",
        "Depth",
        _FORMATS[metric][0],
        layout.label(baseline),
        f"Difference ({unit})",
        "95 % CI",
        "p (corrected)",
        f"learning_gain_ ({unit})",
    ]
    return _markdown(header, rows)


def _table_parameters(results, layout):
    table = parameter_table(results)
    models = layout.depth_models
    header = ["Depth"]
    for m in models:
        header += [f"{layout.label(m)} params", f"{layout.label(m)} eff."]
    rows = []
    for depth in _depths(results):
        at = table[table["depth"] == depth].set_index("model")
        row = [depth]
        for m in models:
            if m in at.index:
                row += [f"{at.loc[m, 'n_parameters']:,.0f}", _eff(at.loc[m, "efficiency"])]
            else:
                row += ["", ""]
        rows.append(row)
    return _markdown(header, rows)


def _table_noise(results, layout, kind):
    drops = noise_drop_table(results, kind=kind)
    models = layout.depth_models
    digits = 2 if layout.metric == "accuracy" else 3
    header = ["Depth"] + [f"{layout.label(m)} drop" for m in models]
    rows = []
    for depth in _depths(results):
        at = drops[drops["depth"] == depth].set_index("model")["drop"]
        best = at.reindex(models).min()
        cells = []
        for m in models:
            if m not in at.index:
                cells.append("")
                continue
            text = f"{at[m]:.{digits}f}"
            cells.append(f"**{text}**" if np.isclose(at[m], best) else text)
        rows.append([depth] + cells)
    return _markdown(header, rows)


def _table_illumination(illumination, layout):
    if illumination.empty:
        return ""
    metric = layout.metric
    _, scale, digits = _FORMATS[metric]
    factors = sorted(illumination["factor"].unique())
    # -1 stands for "no depth": grouping on missing values is awkward in pandas.
    frame = illumination.assign(depth=illumination["depth"].astype("float").fillna(-1))
    mean = frame.groupby(["model", "depth", "factor"])[[metric, "agreement"]].mean()
    order = {m: i for i, m in enumerate(layout.models)}
    keys = sorted(
        {(m, d) for m, d, _ in mean.index}, key=lambda k: (order.get(k[0], len(order)), k[1])
    )
    rows = []
    for model, depth in keys:
        cells = []
        for k in factors:
            row = mean.loc[(model, depth, k)]
            digits_k = 1 if metric == "accuracy" else digits
            cells.append(f"{scale * row[metric]:.{digits_k}f} ({100 * row['agreement']:.0f})")
        rows.append([layout.label(model), "" if depth < 0 else int(depth)] + cells)
    return _markdown(["Model", "Depth"] + [f"k={k:g}" for k in factors], rows)


def _invariance_cost(experiment, layout):
    """One line: the best illumination-invariant row against the best other row.

    Invariance is what the run measured (every prediction unchanged with all bands times
    k, in every fold), not what a row is meant to have. Empty without an illumination
    check or without rows on both sides.
    """
    illumination = experiment.illumination
    if illumination.empty:
        return ""
    frame = illumination.assign(depth=illumination["depth"].astype("float").fillna(-1))
    invariant = frame.groupby(["model", "depth"])["agreement"].min() >= 1.0
    acc = accuracy_table(experiment.results, metric=layout.metric)
    acc = acc.assign(depth=acc["depth"].astype("float").fillna(-1)).set_index(["model", "depth"])
    scores = acc["mean"].reindex(invariant.index).dropna()
    sides = [scores[invariant.reindex(scores.index)], scores[~invariant.reindex(scores.index)]]
    if any(side.empty for side in sides):
        return ""
    (inv_key, inv), (band_key, band) = [(side.idxmax(), side.max()) for side in sides]

    def name(key):
        model, depth = key
        return layout.label(model) + ("" if depth < 0 else f" at depth {depth:.0f}")

    text = (
        f"**What invariance costs here:** the best model whose predictions no change of "
        f"illumination moved, {name(inv_key)}, scores {_score(inv, layout.metric)}; the best "
        f"one that reads the bands' brightness, {name(band_key)}, "
        f"{_score(band, layout.metric)} ({_diff(band - inv, layout.metric)}"
        + (" points)." if layout.metric == "accuracy" else ").")
    )
    if band <= inv:
        return text + " Invariance costs nothing on these data: keep the invariant model."
    row = "nd_sknd_passthrough"
    here = f"; here the row {layout.label(row)}" if row in layout.models else ""
    return text + (
        " Where invariance to illumination is not needed, fit with `passthrough=True` "
        f"(the raw bands beside the indices{here})."
    )


def _protocol_text(experiment, command, layout):
    s = experiment.settings
    lines = [f"Command: `{command}`\n"] if command else []
    lines += _data_lines(s, layout)
    lines.append(
        _folds_text(s, layout) + " Same seed for every model in a fold (network "
        f"initialisation, random forest, noise draws). Seed: {s.get('random_state')}."
    )
    lines += _training_lines(s, layout)
    lines.append(_peers_text(s, layout))
    formulas = [_NOISE_FORMULAS[kind] for kind in layout.kinds]
    if len(formulas) > 1:
        formulas = [f"{kind} {formula}," for kind, formula in zip(layout.kinds, formulas)]
    lines.append(
        f"- Noise: {' and '.join(formulas)} at eta = "
        + ", ".join(f"{100 * v:g}" for v in s.get("noise_levels", []))
        + f" %, mean of {s.get('noise_repeats')} draws per fold"
        + (" (the same draws z for both)." if len(layout.kinds) > 1 else ".")
    )
    lines.append(
        f"- Wall time: {experiment.wall_time:.0f} s with n_jobs={s.get('n_jobs')} "
        f"({os.cpu_count()} CPUs visible)."
    )
    lines.append(
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in s.get("versions", {}).items()) + "."
    )
    return "\n".join(lines)


def _data_lines(s, layout):
    """The dataset: size, bands, classes or the target's distribution."""
    bands = list(map(str, s.get("bands", [])))
    shown = ", ".join(bands) if len(bands) <= 40 else ", ".join(bands[:20]) + ", ..."
    lines = [
        f"- Dataset: **{s.get('dataset') or 'unnamed'}**, {s.get('n_samples')} samples, "
        f"{s.get('n_bands')} bands ({shown})."
    ]
    if layout.task == "classification":
        counts = s.get("class_counts", {})
        lines.append("- Classes: " + ", ".join(f"{c}: {n}" for c, n in counts.items()) + ".")
    elif s.get("target_summary"):
        t = s["target_summary"]
        lines.append(
            f"- Regression target: mean {t['mean']:.4g}, std {t['std']:.4g}, range "
            f"{t['min']:.4g} to {t['max']:.4g}."
        )
    return lines


def _folds_text(s, layout):
    k = s.get("n_splits")
    if s.get("grouped"):
        splitter = "StratifiedGroupKFold" if layout.task == "classification" else "GroupKFold"
        validation = (
            "a quarter of the non-test groups, stratified by class)."
            if layout.task == "classification"
            else "2/9 of the non-test groups)."
        )
        return (
            f"- Protocol: {k}-fold grouped cross-validation ({splitter}, "
            f"{s.get('n_groups')} groups): no group is split between training, validation "
            "and test; the validation part of each fold is whole groups too (" + validation
        )
    if layout.task == "classification":
        return (
            f"- Protocol: {k}-fold stratified cross-validation; in each fold a stratified "
            "train/validation split of the rest (7 : 2, i.e. 70/20/10 % with 10 folds)."
        )
    return (
        f"- Protocol: {k}-fold shuffled cross-validation (KFold); in each fold a random "
        "train/validation split of the rest (7 : 2, i.e. 70/20/10 % with 10 folds)."
    )


def _training_lines(s, layout):
    """The networks' training settings, and a line per row whose recipe differs."""
    networks = ", ".join(layout.networks)
    estimator = "NDClassifier" if layout.task == "classification" else "NDRegressor"
    lines = [
        f"- Network training ({networks}; sknd `{estimator}`): "
        + ", ".join(f"{k}={v}" for k, v in s.get("estimator_params", {}).items())
        + "; early stopping on the validation part."
    ]
    for model, recipe in s.get("network_recipes", {}).items():
        # Rows whose recipe differs from the line above: another starting point or extras.
        extra = {k: v for k, v in recipe["params"].items() if k != "architecture"}
        if recipe["paper_recipe"] and not extra:
            continue
        start = "the paper's settings" if recipe["paper_recipe"] else "the estimator's defaults"
        details = ", ".join(f"{k}={v}" for k, v in extra.items())
        overrides = s.get("network_overrides") or {}
        if not recipe["paper_recipe"] and overrides:
            details = ", ".join(
                filter(None, [details, *(f"{k}={v}" for k, v in overrides.items())])
            )
        lines.append(
            f"- {layout.label(model)}: {start}" + (f" with {details}." if details else ".")
        )
    return lines


def _peers_text(s, layout):
    if layout.task == "classification":
        linear = (
            "logistic regressions (on standardized bands, and on standardized classic NDs: "
            "the fixed-index baseline)"
        )
        best = "the best single classic ND (class thresholds on one unit-coefficient index)"
    else:
        linear = (
            "RidgeCV (on standardized bands, and on standardized classic NDs: the "
            "fixed-index baseline; penalty by efficient leave-one-out), PLS regression "
            "(1-10 components by an inner 5-fold CV)"
        )
        best = "the best single classic ND (a linear regression on one index)"
    return (
        f"- Peers: scikit-learn MLP with {s.get('n_hidden_sklearn_mlp')} units per hidden "
        "layer and the same optimiser settings (trained on train+validation, early stopping "
        f"on an internal random hold-out of the validation share); {linear} and the random "
        f"forest ({s.get('n_estimators')} trees) trained on train+validation; {best} "
        "chosen by exhaustive pair search on the validation part."
        + (
            " The peers' internal splits (the MLP's hold-out, RidgeCV, PLS) are not group-aware."
            if s.get("grouped")
            else ""
        )
    )


def _notes(experiment):
    notes = experiment.settings.get("notes") or []
    if not notes:
        return ""
    return "\n".join(f"- {note}" for note in notes)


def write_report(experiment, output_dir, *, figures=True, command=None):
    """Write the results, the tables and the figures of a run to ``output_dir``.

    Files written: ``results.csv`` (long format, one row per model, depth, fold and noise
    level), ``histories.csv``, ``coefficients.csv``, ``illumination.csv``,
    ``settings.json``, the PNG figures (with ``figures=True``; needs matplotlib) and
    ``report.md`` with the automatic choices of the run, Table 1 (scores and corrected
    paired t-tests), the peers, the comparison with the fixed-index baseline ("was
    learning worth it?"), Table 2 (parameters and efficiency), Table 3 (score drop under
    10 % noise), the illumination check and the figures.

    Parameters
    ----------
    experiment : ExperimentResults
        Output of :func:`run_experiments`.
    output_dir : str or path-like
        Created if needed; existing files of the same names are overwritten.
    figures : bool, default=True
        Draw the PNG figures.
    command : str, default=None
        The command line that produced the run, quoted in the report.

    Returns
    -------
    report : pathlib.Path
        Path of ``report.md``.

    Examples
    --------
    >>> import tempfile
    >>> from sknd.datasets import load_forest_type
    >>> from sknd.experiments import run_experiments, write_report
    >>> X, y = load_forest_type(return_X_y=True, as_frame=True)
    >>> experiment = run_experiments(
    ...     X, y, depths=[2], n_splits=3, models=["logreg_bands", "logreg_nd"],
    ...     noise_levels=[0.0], noise_repeats=1, verbose=0, dataset_name="forest_type")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     text = write_report(experiment, folder, figures=False).read_text()
    >>> text.splitlines()[0]
    '# Normalized-difference networks on forest_type'
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    _write_tables(experiment, output_dir)
    written = []
    if figures:
        from ._figures import save_figures

        written = save_figures(experiment, output_dir)
    layout = _Layout(experiment)
    title = experiment.settings.get("dataset") or "experiment"
    sections = [f"# Normalized-difference networks on {title}"]
    notes = _notes(experiment)
    if notes:
        sections += ["## Automatic choices of this run", notes]
    sections += ["## Settings", _protocol_text(experiment, command, layout)]
    sections += _score_sections(experiment, layout)
    sections += _robustness_sections(experiment, layout)
    if written:
        sections.append("## Figures")
        sections += [f"![{caption}]({name})\n\n*{caption}*" for name, caption in written]
    report = output_dir / "report.md"
    report.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    return report


def _write_tables(experiment, output_dir):
    """The CSV files and ``settings.json``."""
    experiment.results.to_csv(output_dir / "results.csv", index=False)
    experiment.histories.to_csv(output_dir / "histories.csv", index=False)
    experiment.coefficients.to_csv(output_dir / "coefficients.csv", index=False)
    experiment.illumination.to_csv(output_dir / "illumination.csv", index=False)
    settings = dict(experiment.settings, wall_time_s=round(experiment.wall_time, 1))
    (output_dir / "settings.json").write_text(json.dumps(settings, indent=2, default=str))


def _score_sections(experiment, layout):
    """Table 1 (and 1b for regression), the peers and the fixed-index comparison."""
    results, metric = experiment.results, layout.metric
    n_folds = experiment.settings.get("n_splits", results["fold"].nunique())
    sections = [
        f"## Table 1. Test {_FORMATS[metric][0]}, mean ± std over {n_folds} folds",
        _table_scores(results, layout, metric),
        "Best mean per depth in bold. " + _TEST_NOTE,
    ]
    if metric == "r2":
        sections += [
            f"## Table 1b. Test RMSE, mean ± std over {n_folds} folds (lower is better)",
            _table_scores(results, layout, "rmse"),
        ]
    sections += [
        "## Peers without a depth, on the same folds",
        _table_peers(results, layout) or "(none run)",
    ]
    cost = _invariance_cost(experiment, layout)
    sections += [cost] if cost else []
    learning = _table_learning(results, layout)
    if learning:
        sections += [
            "## Was learning worth it? Networks against the fixed-index baseline",
            learning,
            f"Difference = network - {layout.label(layout.baseline)}, paired by fold, with "
            "the 95 % confidence interval and p-value of the corrected resampled t-test "
            "(Nadeau & Bengio 2003). A positive difference whose interval excludes 0 means "
            "learning the index coefficients beat the classic unit-coefficient indices. "
            "learning_gain_ is the mean over folds of what training gained over the "
            "tuned fixed-index start on each fit's own validation part (sknd's default "
            "recipe, at every depth; n/a elsewhere).",
        ]
    return sections


#: What the report says of each noise model under its Table 3.
_NOISE_NAMES = {
    "multiplicative": "multiplicative noise (the paper's)",
    "additive": "additive noise (a fixed size per band)",
}


def _robustness_sections(experiment, layout):
    """Table 2 (parameters), Table 3 (noise drop, the paper's noise first; 3b additive)
    and the illumination check."""
    results, metric = experiment.results, layout.metric
    name = _FORMATS[metric][0]
    high = results["noise"].max() * 100
    drop_unit = "percentage points" if metric == "accuracy" else "R²"
    sections = [
        "## Table 2. Parameters and efficiency (score per 100 parameters)",
        _table_parameters(results, layout),
    ]
    for number, kind in zip(("3", "3b"), layout.kinds):
        noise = _NOISE_NAMES.get(kind, f"{kind} noise")
        sections += [
            f"## Table {number}. {name} drop ({drop_unit}) from 0 to {high:g} % {noise}",
            _table_noise(results, layout, kind),
            f"Noise {_NOISE_FORMULAS[kind]}. Mean over folds of the per-fold drop; lower is "
            "more robust (best in bold).",
        ]
    return sections + [
        f"## Illumination check: {name} (predictions unchanged %) with all bands times k",
        _table_illumination(experiment.illumination, layout) or "(not run)",
    ]
