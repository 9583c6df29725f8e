"""Write an experiment's CSV files, figures and Markdown report to a directory."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ._protocol import DEPTH_MODELS, MODEL_LABELS, MODELS, PAPER_MODELS
from ._tables import accuracy_table, noise_drop_table, paired_ttest, parameter_table


def _pm(mean, std):
    std = "n/a" if pd.isna(std) else f"{100 * std:.2f}"
    return f"{100 * mean:.2f} ± {std}"


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


def _models(results, candidates):
    present = set(results["model"])
    return [m for m in candidates if m in present]


def _depths(results):
    return [int(d) for d in sorted(results["depth"].dropna().unique())]


def _table_accuracy(results):
    acc = accuracy_table(results)
    models = _models(results, DEPTH_MODELS)
    tests = {
        other: paired_ttest(results, "nd", other).set_index("depth")["p_value"]
        for other in ("mlp", "sklearn_mlp")
        if "nd" in models and other in models
    }
    header = ["Depth"] + [MODEL_LABELS[m] for m in models]
    header += [f"p (ND vs {MODEL_LABELS[o]})" for o in tests]
    rows = []
    for depth in _depths(results):
        at = acc[acc["depth"] == depth].set_index("model")
        means = at["mean"].reindex(models)
        best = means.max()
        cells = []
        for m in models:
            if m not in at.index:
                cells.append("")
                continue
            text = _pm(at.loc[m, "mean"], at.loc[m, "std"])
            # Bold the best mean of the row, as in the paper.
            cells.append(f"**{text}**" if np.isclose(at.loc[m, "mean"], best) else text)
        rows.append([depth] + cells + [_p(t.get(depth, np.nan)) for t in tests.values()])
    return _markdown(header, rows)


def _table_peers(results):
    peers = _models(results, [m for m in MODELS if m not in DEPTH_MODELS])
    if not peers:
        return ""
    acc = accuracy_table(results).set_index("model")
    params = parameter_table(results).set_index("model")
    drops = noise_drop_table(results).set_index("model")
    clean = results[np.isclose(results["noise"], results["noise"].min())]
    rows = []
    for m in peers:
        note = ""
        if m == "best_nd_pair":
            pairs = clean.loc[clean["model"] == m, "selected_pair"].value_counts()
            note = "pairs: " + ", ".join(f"{p} ({n}x)" for p, n in pairs.head(3).items())
            note += "; parameters = tree nodes"
        elif m == "random_forest":
            note = "parameters = tree nodes"
        rows.append(
            [
                MODEL_LABELS[m],
                _pm(acc.loc[m, "mean"], acc.loc[m, "std"]),
                f"{params.loc[m, 'n_parameters']:,.0f}",
                _eff(params.loc[m, "efficiency"]),
                f"{drops.loc[m, 'drop']:.2f}",
                note,
            ]
        )
    header = ["Model", "Accuracy (%)", "Params", "Eff.", "Noise drop (pp)", "Note"]
    return _markdown(header, rows)


def _table_parameters(results):
    table = parameter_table(results)
    models = _models(results, DEPTH_MODELS)
    header = ["Depth"]
    for m in models:
        header += [f"{MODEL_LABELS[m]} params", f"{MODEL_LABELS[m]} eff."]
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


def _table_noise(results):
    drops = noise_drop_table(results)
    models = _models(results, DEPTH_MODELS)
    header = ["Depth"] + [f"{MODEL_LABELS[m]} drop" for m in models]
    rows = []
    for depth in _depths(results):
        at = drops[drops["depth"] == depth].set_index("model")["drop"]
        best = at.reindex(models).min()
        cells = []
        for m in models:
            if m not in at.index:
                cells.append("")
                continue
            text = f"{at[m]:.2f}"
            cells.append(f"**{text}**" if np.isclose(at[m], best) else text)
        rows.append([depth] + cells)
    return _markdown(header, rows)


def _table_illumination(illumination):
    if illumination.empty:
        return ""
    factors = sorted(illumination["factor"].unique())
    # -1 stands for "no depth": grouping on missing values is awkward in pandas.
    frame = illumination.assign(depth=illumination["depth"].astype("float").fillna(-1))
    mean = frame.groupby(["model", "depth", "factor"])[["accuracy", "agreement"]].mean() * 100
    order = {m: i for i, m in enumerate(MODELS)}
    keys = sorted({(m, d) for m, d, _ in mean.index}, key=lambda k: (order[k[0]], k[1]))
    rows = []
    for model, depth in keys:
        cells = []
        for k in factors:
            row = mean.loc[(model, depth, k)]
            cells.append(f"{row['accuracy']:.1f} ({row['agreement']:.0f})")
        rows.append([MODEL_LABELS[model], "" if depth < 0 else int(depth)] + cells)
    return _markdown(["Model", "Depth"] + [f"k={k:g}" for k in factors], rows)


def _protocol_text(experiment, command):
    s = experiment.settings
    params = s.get("estimator_params", {})
    names = s.get("target_names")
    counts = s.get("class_counts", {})
    classes = ", ".join(
        f"{names[int(c)] if names is not None else c}: {n}" for c, n in counts.items()
    )
    lines = []
    if command:
        lines.append(f"Command: `{command}`\n")
    lines += [
        (
            f"- Dataset: **{s.get('dataset') or 'unnamed'}**, {s.get('n_samples')} samples, "
            f"{s.get('n_bands')} bands ({', '.join(map(str, s.get('bands', [])))})."
        ),
        f"- Classes: {classes}.",
        (
            f"- Protocol: {s.get('n_splits')}-fold stratified cross-validation; in each fold a "
            "stratified train/validation split of the rest (7 : 2, i.e. 70/20/10 % with 10 "
            "folds). Same seed for every model in a fold (network initialisation, random forest, "
            "noise draws). Seed: "
            f"{s.get('random_state')}."
        ),
        f"- Network training ({', '.join(PAPER_MODELS)}; sknd `NDClassifier`): "
        + ", ".join(f"{k}={v}" for k, v in params.items())
        + "; early stopping on the validation part.",
        (
            f"- Peers: scikit-learn MLP with {s.get('n_hidden_sklearn_mlp')} units per hidden "
            "layer and the same optimiser settings (trained on train+validation, early stopping "
            "on an internal stratified hold-out of the validation share); logistic regressions and "
            f"the random forest ({s.get('n_estimators')} trees) trained on train+validation; the "
            "best single classic ND (class thresholds on one unit-coefficient index) chosen by "
            "exhaustive pair search on the validation part."
        ),
        "- Noise: b + eta |b| z at eta = "
        + ", ".join(f"{100 * v:g}" for v in s.get("noise_levels", []))
        + f" %, mean of {s.get('noise_repeats')} draws per fold.",
        (
            f"- Wall time: {experiment.wall_time:.0f} s with n_jobs={s.get('n_jobs')} "
            f"({os.cpu_count()} CPUs visible)."
        ),
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in s.get("versions", {}).items()) + ".",
    ]
    return "\n".join(lines)


def write_report(experiment, output_dir, *, figures=True, command=None):
    """Write the results, the tables and the figures of a run to ``output_dir``.

    Files written: ``results.csv`` (long format, one row per model, depth, fold and noise
    level), ``histories.csv``, ``coefficients.csv``, ``illumination.csv``,
    ``settings.json``, the PNG figures (with ``figures=True``; needs matplotlib) and
    ``report.md`` with Table 1 (accuracy and paired t-tests), Table 2 (parameters and
    efficiency), Table 3 (accuracy drop under 10 % noise), the peers, the illumination
    check and the figures.

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
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    results = experiment.results
    results.to_csv(output_dir / "results.csv", index=False)
    experiment.histories.to_csv(output_dir / "histories.csv", index=False)
    experiment.coefficients.to_csv(output_dir / "coefficients.csv", index=False)
    experiment.illumination.to_csv(output_dir / "illumination.csv", index=False)
    settings = dict(experiment.settings, wall_time_s=round(experiment.wall_time, 1))
    (output_dir / "settings.json").write_text(json.dumps(settings, indent=2, default=str))

    written = []
    if figures:
        from ._figures import save_figures

        written = save_figures(experiment, output_dir)

    n_folds = experiment.settings.get("n_splits", results["fold"].nunique())
    high = results["noise"].max() * 100
    title = experiment.settings.get("dataset") or "experiment"
    sections = [
        f"# Normalized-difference networks on {title}",
        _protocol_text(experiment, command),
        f"## Table 1. Test accuracy (%), mean ± std over {n_folds} folds",
        _table_accuracy(results),
        (
            "Best mean per depth in bold. p: two-sided paired t-test over folds "
            "(`scipy.stats.ttest_rel`). Standard deviations use ddof=1."
        ),
        "## Peers without a depth, on the same folds",
        _table_peers(results) or "(none run)",
        "## Table 2. Parameters and efficiency (accuracy % per 100 parameters)",
        _table_parameters(results),
        f"## Table 3. Accuracy drop (percentage points) from 0 to {high:g} % noise",
        _table_noise(results),
        "Mean over folds of the per-fold drop; lower is more robust (best in bold).",
        "## Illumination check: accuracy % (predictions unchanged %) with all bands times k",
        _table_illumination(experiment.illumination) or "(not run)",
    ]
    if written:
        sections.append("## Figures")
        sections += [f"![{caption}]({name})\n\n*{caption}*" for name, caption in written]
    report = output_dir / "report.md"
    report.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    return report
