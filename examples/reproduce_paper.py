"""Reproduce the paper's experiments on the datasets shipped with sknd
===================================================================

Runs the protocol of the paper (10-fold stratified cross-validation with a 70/20/10
train/validation/test split, ND / MLP / AttND networks at depths 2, 3 and 4, the paper's
training settings) plus the scikit-learn peers, the noise robustness and the illumination
check, and writes for each dataset ``results.csv``, ``report.md`` (Tables 1-3) and the
figures to ``results/<dataset>/``. It then prints the question the report answers for a
user: did learning the index coefficients beat logistic regression on the standardized
classic indices (the fixed-index baseline)? The p-values are the corrected resampled
t-test (Nadeau & Bengio 2003), with a 95 % confidence interval of the difference.

This is the Python-API version of::

    python -m sknd.experiments --dataset forest_type --n-jobs 2
    python -m sknd.experiments --dataset satimage --n-jobs 2

Usage::

    python examples/reproduce_paper.py                   # a quick look: forest_type, < 1 min
    python examples/reproduce_paper.py --full --n-jobs 2 # the paper's protocol, both datasets
    python examples/reproduce_paper.py --full --datasets forest_type --n-jobs 2

Without ``--full`` the run is the CLI's ``--quick`` mode (3 folds, depths 2-3, 30 epochs,
2 noise draws, 50 trees, at most 1000 rows per dataset) on forest_type: a look at the
protocol and the report, not the paper's numbers. The full protocol took 83 s on
forest_type and about a quarter of an hour on satimage (36 bands, so 630 band pairs) on two
shared cores; docs/experiments.md gives the measured wall times and the results. The full
protocol shows a progress bar with the time left; the quick look, under a minute, does not.
"""

import argparse
from pathlib import Path

from sklearn.model_selection import train_test_split

from sknd.experiments import (
    accuracy_table,
    load_experiment_data,
    paired_ttest,
    run_experiments,
    write_report,
)
from sknd.plotting import pyplot

#: Rows per dataset in the quick look.
QUICK_ROWS = 1000


def main():
    plt = pyplot()  # matplotlib, or the command that installs it
    plt.switch_backend("Agg")  # write files, never open windows
    parser = argparse.ArgumentParser(
        description="Reproduce the paper's experiments on the datasets shipped with sknd."
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_true", help="the paper's whole protocol")
    mode.add_argument("--quick", action="store_true", help="a quick look (the default)")
    parser.add_argument(
        "--datasets", help="comma-separated (default: forest_type; with --full both)"
    )
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--output", type=Path, default=Path("results"))
    args = parser.parse_args()

    quick = not args.full
    datasets = args.datasets or ("forest_type" if quick else "forest_type,satimage")
    if quick:
        options = {
            "n_splits": 3,
            "depths": [2, 3],
            "noise_repeats": 2,
            "n_estimators": 50,
            "estimator_params": {"max_epochs": 30, "patience": 10},
        }
    else:
        options = {"n_splits": 10, "depths": [2, 3, 4]}

    for name in datasets.split(","):
        data = load_experiment_data(name)
        X, y = data.X, data.y
        if quick and len(y) > QUICK_ROWS:  # a stratified subsample, as the CLI's --quick
            X, _, y, _ = train_test_split(X, y, train_size=QUICK_ROWS, stratify=y, random_state=0)
        experiment = run_experiments(
            X,
            y,
            n_jobs=args.n_jobs,
            random_state=0,
            dataset_name=name,
            target_names=data.target_names,
            notes=data.notes,
            verbose=0 if quick else 1,
            **options,
        )
        report = write_report(
            experiment,
            args.output / name,
            command=f"python examples/reproduce_paper.py{'' if quick else ' --full'}",
        )

        clean = accuracy_table(experiment.results)
        clean = clean[clean["model"].isin(["nd", "mlp", "attnd"])]
        fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
        for model, rows in clean.groupby("model", sort=False):
            ax.errorbar(
                rows["depth"],
                100 * rows["mean"],
                yerr=100 * rows["std"],
                marker="o",
                capsize=3,
                label=model,
            )
        ax.set(xlabel="depth", ylabel="test accuracy (%)", title=f"{name}: mean ± std over folds")
        ax.set_xticks(sorted(clean["depth"].unique()))
        fig.legend(loc="outside right upper")  # beside the error bars, not over them
        print(f"\n{name}: {experiment.wall_time:.0f} s, {name}/{Path(report).name} written")
        print(clean.pivot(index="depth", columns="model", values="mean").mul(100).round(2))
        columns = ["depth", "difference", "ci_low", "ci_high", "p_value"]
        print("ND - MLP (corrected t-test):")
        print(paired_ttest(experiment.results, "nd", "mlp")[columns].round(4))
        print("ND - LogisticRegression on standardized classic NDs:")
        print(paired_ttest(experiment.results, "nd", "logreg_nd")[columns].round(4))


if __name__ == "__main__":
    main()
