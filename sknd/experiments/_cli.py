"""Command line of ``python -m sknd.experiments``."""

import argparse
import shlex
import sys
import warnings
from pathlib import Path

from ._data import SHIPPED_DATASETS, load_experiment_data
from ._noise import PAPER_NOISE_LEVELS
from ._protocol import MODELS, run_experiments
from ._report import write_report

#: What ``--quick`` changes (explicit options still win). Chosen so that a quick run on a
#: shipped dataset takes well under two minutes on two cores.
QUICK = {
    "folds": 3,
    "depths": [2, 3],
    "max_epochs": 30,
    "patience": 10,
    "noise_repeats": 2,
    "n_estimators": 50,
    "max_samples": 1000,
}
DEFAULTS = {
    "folds": 10,
    "depths": [2, 3, 4],
    "max_epochs": None,
    "patience": None,
    "noise_repeats": 5,
    "n_estimators": 100,
    "max_samples": None,
}


def _int_list(text):
    return [int(v) for v in text.replace(",", " ").split()]


def _float_list(text):
    return [float(v) for v in text.replace(",", " ").split()]


def _str_list(text):
    return [v.strip() for v in text.split(",") if v.strip()]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m sknd.experiments",
        description=(
            "Reproduce the normalized-difference paper's experiments: stratified K-fold "
            "cross-validation (70/20/10 train/validation/test with 10 folds) of the ND, MLP "
            "and AttND networks and of scikit-learn peers, noise robustness and an "
            "illumination check. Writes results.csv, report.md and PNG figures."
        ),
    )
    parser.add_argument(
        "--dataset",
        required=True,
        help=f"one of {', '.join(SHIPPED_DATASETS)}, or the path of a CSV file",
    )
    parser.add_argument(
        "--target",
        default=None,
        help="class column of a CSV (default: a column named class, target, "
        "label or y); all other numeric columns are bands",
    )
    parser.add_argument(
        "--bands",
        type=_str_list,
        default=None,
        help="comma-separated band columns to use (default: all)",
    )
    parser.add_argument(
        "--depths",
        type=_int_list,
        default=None,
        help="network depths, e.g. '2,3,4' (default 2,3,4; quick 2,3)",
    )
    parser.add_argument(
        "--folds", type=int, default=None, help="cross-validation folds (default 10; quick 3)"
    )
    parser.add_argument(
        "--output", type=Path, default=None, help="output directory (default results/DATASET)"
    )
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=1,
        help="parallel workers over folds and models (joblib; default 1)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a fast smoke run: " + ", ".join(f"{k}={v}" for k, v in QUICK.items()),
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--models",
        type=_str_list,
        default=None,
        help="comma-separated subset of: " + ", ".join(MODELS),
    )
    parser.add_argument(
        "--max-epochs",
        type=int,
        default=None,
        help="override the paper's 150 epochs (networks and sklearn MLP)",
    )
    parser.add_argument(
        "--patience",
        type=int,
        default=None,
        help="override the paper's early-stopping patience of 25 epochs",
    )
    parser.add_argument(
        "--hidden-units",
        type=int,
        default=None,
        help="units per hidden layer (default: NDClassifier's, the number of band pairs "
        "clipped to 8..256)",
    )
    parser.add_argument(
        "--noise-levels",
        type=_float_list,
        default=None,
        help="noise levels in %% (default 0,2,4,6,8,10)",
    )
    parser.add_argument(
        "--noise-repeats",
        type=int,
        default=None,
        help="noise draws per level and fold (default 5; quick 2)",
    )
    parser.add_argument(
        "--n-estimators",
        type=int,
        default=None,
        help="trees of the random forest peer (default 100; quick 50)",
    )
    parser.add_argument(
        "--max-samples",
        type=int,
        default=None,
        help="use a stratified random subsample of this many rows",
    )
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    return parser


def _resolve(args):
    """Fill unset options from the quick or the full defaults."""
    base = QUICK if args.quick else DEFAULTS
    for name, value in base.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv=None):
    """Run the command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments without the program name; None means ``sys.argv[1:]``.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = _resolve(parser.parse_args(argv))
    try:
        data = load_experiment_data(
            args.dataset,
            target=args.target,
            bands=args.bands,
            max_samples=args.max_samples,
            random_state=args.seed,
        )
    except (ValueError, OSError) as exc:
        # A wrong path or column is a usage error: say so without a traceback.
        parser.error(str(exc))
    output = args.output or Path("results") / data.name
    estimator_params = {
        key: value
        for key, value in (
            ("max_epochs", args.max_epochs),
            ("patience", args.patience),
            ("hidden_units", args.hidden_units),
        )
        if value is not None
    }
    noise_levels = (
        PAPER_NOISE_LEVELS
        if args.noise_levels is None
        else [level / 100 for level in args.noise_levels]
    )
    figures = not args.no_figures
    if figures:
        try:
            import matplotlib

            # Files only: no display is needed (or available on a server).
            matplotlib.use("Agg")
        except ImportError:
            warnings.warn("matplotlib is not installed: skipping the figures.", stacklevel=1)
            figures = False
    if not args.quiet:
        print(
            f"sknd.experiments: {data.name}, {len(data.y)} samples x {data.X.shape[1]} bands, "
            f"{args.folds} folds, depths {args.depths}, n_jobs={args.n_jobs} -> {output}",
            file=sys.stderr,
        )
    experiment = run_experiments(
        data.X,
        data.y,
        depths=args.depths,
        n_splits=args.folds,
        models=args.models or MODELS,
        noise_levels=noise_levels,
        noise_repeats=args.noise_repeats,
        estimator_params=estimator_params,
        n_estimators=args.n_estimators,
        n_jobs=args.n_jobs,
        random_state=args.seed,
        verbose=0 if args.quiet else 1,
        dataset_name=data.name,
    )
    experiment.settings["target_names"] = list(data.target_names)
    experiment.settings["command"] = "python -m sknd.experiments " + shlex.join(argv)
    report = write_report(
        experiment, output, figures=figures, command=experiment.settings["command"]
    )
    if not args.quiet:
        print(f"Done in {experiment.wall_time:.0f} s. Report: {report}", file=sys.stderr)
    return 0
