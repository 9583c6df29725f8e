"""Command line of ``python -m sknd.experiments``."""

import argparse
import os
import shlex
import sys
import warnings
from pathlib import Path

from ..bands import resolve_bands
from ._checks import check_run_arguments
from ._data import SHIPPED_DATASETS, load_experiment_data
from ._noise import PAPER_NOISE_LEVELS
from ._protocol import run_experiments
from ._report import write_report
from ._specs import specs_for
from ._splits import check_groups

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


def _pairs(text):
    if text in ("all", "auto"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'all', 'auto' or a number of pairs, got {text!r}"
        ) from None


def _str_list(text):
    return [v.strip() for v in text.split(",") if v.strip()]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m sknd.experiments",
        description=(
            "Reproduce the normalized-difference paper's experiments: K-fold "
            "cross-validation (70/20/10 train/validation/test with 10 folds; stratified for "
            "classification, grouped with --groups or --spatial-blocks) of the ND, MLP "
            "and AttND networks and of scikit-learn peers, noise robustness and an "
            "illumination check. Writes results.csv, report.md and PNG figures; every "
            "automatic choice is printed and listed in the report."
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
        help="target column of a CSV (default: a column named class, target, "
        "label or y); the other numeric columns are bands, except groups, coordinates, "
        "--exclude and id/fold-like names",
    )
    parser.add_argument(
        "--task",
        choices=("classification", "regression"),
        default="classification",
        help="classification (NDClassifier, accuracy) or regression (NDRegressor, R2 and "
        "RMSE, Ridge/PLS peers); default classification",
    )
    parser.add_argument(
        "--groups",
        default=None,
        metavar="COLUMN",
        help="column of group labels (field, plot, fold id): no group is split between "
        "training, validation and test (StratifiedGroupKFold / GroupKFold)",
    )
    parser.add_argument(
        "--spatial-blocks",
        type=float,
        default=None,
        metavar="SIZE",
        help="spatial block cross-validation: groups are square blocks of SIZE coordinate "
        "units (needs --coords)",
    )
    parser.add_argument(
        "--coords",
        type=_str_list,
        default=None,
        metavar="X_COL,Y_COL",
        help="coordinate columns for --spatial-blocks (never used as bands)",
    )
    parser.add_argument(
        "--exclude",
        type=_str_list,
        default=None,
        metavar="COLS",
        help="comma-separated columns that are not bands (other targets, metadata)",
    )
    parser.add_argument(
        "--sensor",
        default=None,
        help="sensor of the band names (e.g. sentinel2, landsat8) to name classic indices "
        "in the figures and the known_index column of coefficients.csv",
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
        help="comma-separated subset of the models; classification: "
        + ", ".join(spec.name for spec in specs_for("classification"))
        + "; regression: "
        + ", ".join(spec.name for spec in specs_for("regression")),
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
        "--pairs",
        type=_pairs,
        default=None,
        help="band pairs of the ND layers: all, auto (screened) or a count to keep "
        "(default: the estimators' own); with hundreds of bands, auto is much faster",
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
        help="use a random subsample of this many rows (stratified for classification)",
    )
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar and no notes on stderr"
    )
    return parser


# Names of run_experiments' arguments on the command line, for messages.
_OPTIONS = {
    name: "--" + name.replace("_", "-")
    for name in (
        "depths",
        "models",
        "noise_levels",
        "n_jobs",
        "max_epochs",
        "patience",
        "hidden_units",
        "sensor",
        "pairs",
    )
}
_OPTIONS["X"] = "--dataset"


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
    args = parser.parse_args(argv)
    folds_given = args.folds is not None
    args = _resolve(args)
    estimator_params = {
        key: value
        for key, value in (
            ("max_epochs", args.max_epochs),
            ("patience", args.patience),
            ("hidden_units", args.hidden_units),
            ("sensor", args.sensor),
            ("pairs", args.pairs),
        )
        if value is not None
    }
    noise_levels = (
        PAPER_NOISE_LEVELS
        if args.noise_levels is None
        else [level / 100 for level in args.noise_levels]
    )
    try:
        if args.output is not None:
            _check_output(args.output)
        for option, value, least in (
            ("--folds", args.folds, 2),
            ("--noise-repeats", args.noise_repeats, 1),
            ("--n-estimators", args.n_estimators, 1),
        ):
            if value < least:
                raise ValueError(f"{option} must be at least {least}, got {value}.")
        data = load_experiment_data(
            args.dataset,
            target=args.target,
            bands=args.bands,
            task=args.task,
            groups=args.groups,
            coords=args.coords,
            block_size=args.spatial_blocks,
            exclude=args.exclude,
            max_samples=args.max_samples,
            random_state=args.seed,
        )
        n_groups = None if data.groups is None else len(set(data.groups))
        if n_groups is not None and 3 <= n_groups < args.folds and not folds_given:
            data.notes.append(
                f"{n_groups} folds, one per group of {data.group_name} (fewer groups than "
                f"the default {args.folds} folds; set with --folds)."
            )
            args.folds = n_groups
        check_groups(
            data.y,
            data.groups,
            args.folds,
            data.task,
            name=data.group_name or "groups",
            folds_option="--folds",
        )
        check_run_arguments(
            data.X,
            data.y,
            task=data.task,
            depths=args.depths,
            models=args.models,
            noise_levels=noise_levels,
            estimator_params=estimator_params,
            n_jobs=args.n_jobs,
            n_splits=args.folds,
            options=_OPTIONS,
        )
        if args.models is not None:
            specs_for(data.task, args.models)
        if args.sensor is not None:
            # The networks would fail on the first fit; say it now, naming the option.
            try:
                resolve_bands(None, feature_names=list(data.X.columns), sensor=args.sensor)
            except ValueError as exc:
                raise ValueError(f"--sensor {args.sensor}: {exc}") from None
        output = args.output or Path("results") / data.name
        _check_output(output)  # before anything trains, not when the report is written
    except (ValueError, OSError) as exc:
        # A wrong path, column or option is a usage error: say so without a traceback.
        parser.error(str(exc))
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
        grouping = f", grouped by {data.group_name}" if data.groups is not None else ""
        print(
            f"sknd.experiments: {data.name} ({data.task}), {len(data.y)} samples x "
            f"{data.X.shape[1]} bands, {args.folds} folds{grouping}, depths {args.depths}, "
            f"n_jobs={args.n_jobs} -> {output}",
            file=sys.stderr,
        )
    try:
        experiment = _run(args, data, estimator_params, noise_levels)
    except ValueError as exc:
        # What the run refuses before training (e.g. folds a class cannot fill) is a usage
        # error too; run_experiments names the data and the fold.
        parser.error(str(exc))
    experiment.settings["command"] = "python -m sknd.experiments " + shlex.join(argv)
    report = write_report(
        experiment, output, figures=figures, command=experiment.settings["command"]
    )
    if not args.quiet:
        print(f"Done in {experiment.wall_time:.0f} s. Report: {report}", file=sys.stderr)
    return 0


def _check_output(output):
    """Refuse an output folder that cannot be created or written in."""
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file: name a folder for the report.")
    existing = output
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(
            f"--output {output} cannot be created: {existing} is a file, not a folder."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--output {output} cannot be created: {existing} is not writable.")


def _run(args, data, estimator_params, noise_levels):
    return run_experiments(
        data.X,
        data.y,
        task=data.task,
        groups=data.groups,
        depths=args.depths,
        n_splits=args.folds,
        models=args.models,
        noise_levels=noise_levels,
        noise_repeats=args.noise_repeats,
        estimator_params=estimator_params,
        n_estimators=args.n_estimators,
        n_jobs=args.n_jobs,
        random_state=args.seed,
        verbose=0 if args.quiet else 1,
        dataset_name=data.name,
        target_names=data.target_names,
        notes=data.notes,
    )
