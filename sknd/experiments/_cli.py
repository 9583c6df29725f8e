"""Command line of ``python -m sknd.experiments``.

Its options are declared once, in :data:`OPTIONS`: the table builds the argparse parser
and the option list of ``docs/experiments.md`` (:func:`options_markdown`; a test keeps the
page in step). ``main`` reads the options, loads and checks the data, runs the protocol and
writes the report.
"""

import argparse
import os
import shlex
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..bands import resolve_bands
from ._checks import check_run_arguments
from ._data import SHIPPED_DATASETS, load_experiment_data
from ._noise import PAPER_NOISE_LEVELS, RUN_NOISE_KINDS
from ._protocol import run_experiments
from ._report import write_report
from ._specs import PAPER_SETTINGS, specs_for
from ._splits import check_groups

__all__ = ["OPTIONS", "Option", "build_parser", "main", "options_markdown"]

_DESCRIPTION = (
    "Reproduce the normalized-difference paper's experiments: K-fold "
    "cross-validation (70/20/10 train/validation/test with 10 folds; stratified for "
    "classification, grouped with --groups or --spatial-blocks) of the ND, MLP "
    "and AttND networks and of scikit-learn peers, noise robustness and an "
    "illumination check. Writes results.csv, report.md and PNG figures; every "
    "automatic choice is printed and listed in the report."
)


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


@dataclass(frozen=True)
class Option:
    """One option of the command line: how argparse reads it and how the docs list it.

    ``default`` is the value of a full run and ``quick`` that of ``--quick`` (None: the
    same); ``shown`` replaces the default in ``--help`` and the docs where the value alone
    would not say what happens. ``flag=True`` makes a switch.
    """

    name: str
    help: str
    group: str
    metavar: str | None = None
    type: Callable | None = None
    choices: tuple | None = None
    default: object = None
    quick: object = None
    shown: str | None = None
    flag: bool = False
    required: bool = False

    @property
    def dest(self):
        return self.name[2:].replace("-", "_")

    @property
    def usage(self):
        """The option as the docs write it, e.g. ``--folds K``."""
        if self.flag:
            return self.name
        value = "{" + ",".join(self.choices) + "}" if self.choices else self.metavar
        return f"{self.name} {value or self.dest.upper()}"

    @property
    def default_text(self):
        """The default as ``--help`` and the docs show it."""
        if self.flag:
            return "off"
        if self.required:
            return "required"
        text = self.shown if self.shown is not None else _show(self.default)
        return text if self.quick is None else f"{text}; --quick: {_show(self.quick)}"


def _show(value):
    if value is None:
        return "none"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


_DATA, _FOLDS, _MODELS, _NOISE, _RUN = (
    "data",
    "cross-validation",
    "models and training",
    "noise",
    "run and output",
)
_MODEL_NAMES = "; ".join(
    f"{task}: " + ", ".join(spec.name for spec in specs_for(task))
    for task in ("classification", "regression")
)

#: Every option of ``python -m sknd.experiments``, in the order of ``--help`` and the docs.
OPTIONS = (
    Option("--dataset", f"one of {', '.join(SHIPPED_DATASETS)}, or the path of a CSV file",
           _DATA, metavar="NAME_OR_CSV", required=True),
    Option("--target", "target column of a CSV; the other numeric columns are bands, except "
           "groups, coordinates, --exclude and id/fold-like names", _DATA, metavar="COLUMN",
           shown="a column named class, target, label or y"),
    Option("--task", "classification (NDClassifier, accuracy) or regression (NDRegressor, R2 "
           "and RMSE, Ridge/PLS peers)", _DATA, choices=("classification", "regression"),
           default="classification"),
    Option("--bands", "comma-separated band columns to use (e.g. the satimage centre pixel "
           "p4_green,p4_red,p4_nir1,p4_nir2)", _DATA, metavar="A,B,...", type=_str_list,
           shown="all"),
    Option("--exclude", "comma-separated columns that are not bands (other targets, "
           "metadata)", _DATA, metavar="COLS", type=_str_list),
    Option("--sensor", "sensor of the band names (e.g. sentinel2, landsat8) to name classic "
           "indices in the figures and the known_index column of coefficients.csv", _DATA,
           metavar="NAME"),
    Option("--max-samples", "use a random subsample of this many rows (stratified for "
           "classification)", _DATA, metavar="N", type=int, shown="all", quick=1000),
    Option("--folds", "cross-validation folds (with fewer groups than folds and no --folds: "
           "one fold per group)", _FOLDS, metavar="K", type=int, default=10, quick=3),
    Option("--groups", "column of group labels (field, plot, fold id): no group is split "
           "between training, validation and test (StratifiedGroupKFold / GroupKFold)",
           _FOLDS, metavar="COLUMN"),
    Option("--spatial-blocks", "spatial block cross-validation: groups are square blocks of "
           "SIZE coordinate units (needs --coords)", _FOLDS, metavar="SIZE", type=float),
    Option("--coords", "coordinate columns for --spatial-blocks (never used as bands)",
           _FOLDS, metavar="X_COL,Y_COL", type=_str_list),
    Option("--seed", "random seed of the folds and of the per-fold seeds", _FOLDS,
           metavar="S", type=int, default=0),
    Option("--models", "comma-separated subset of the models; " + _MODEL_NAMES, _MODELS,
           metavar="A,B,...", type=_str_list, shown="all of the task"),
    Option("--depths", "network depths (layers from input to output)", _MODELS,
           metavar="2,3,4", type=_int_list, default=[2, 3, 4], quick=[2, 3]),
    Option("--max-epochs", "training epochs at most (networks and scikit-learn MLP)", _MODELS,
           metavar="N", type=int, shown=f"the paper's {PAPER_SETTINGS['max_epochs']}",
           quick=30),
    Option("--patience", "early-stopping patience in epochs (networks and scikit-learn MLP)",
           _MODELS, metavar="N", type=int, shown=f"the paper's {PAPER_SETTINGS['patience']}",
           quick=10),
    Option("--hidden-units", "units per hidden layer (networks and scikit-learn MLP)",
           _MODELS, metavar="N", type=int,
           shown="NDClassifier's: the number of band pairs clipped to 8..256"),
    Option("--pairs", "band pairs of the ND layers: all, auto (screened) or a count to keep; "
           "with hundreds of bands, auto is much faster", _MODELS, metavar="{all,auto,N}",
           type=_pairs, shown="the estimators'"),
    Option("--n-estimators", "trees of the random forest peer", _MODELS, metavar="N",
           type=int, default=100, quick=50),
    Option("--noise-levels", "noise levels in %", _NOISE, metavar="0,2,...",
           type=_float_list, shown=_show([f"{100 * v:g}" for v in PAPER_NOISE_LEVELS])),
    Option("--noise-repeats", "noise draws per level and fold", _NOISE, metavar="N",
           type=int, default=5, quick=2),
    Option("--noise-kind", "multiplicative: the paper's b + eta abs(b) z; additive: b + eta s z "
           "with s each band's standard deviation on the training rows, clipped at 0 (sensor "
           "noise of a fixed size, hardest on dark pixels); both: each, the paper's first in "
           "the report", _NOISE, choices=RUN_NOISE_KINDS, default="both"),
    Option("--output", "output directory", _RUN, metavar="DIR", type=Path,
           shown="results/DATASET"),
    Option("--n-jobs", "parallel workers (joblib); each runs one (model, depth, fold) at a "
           "time with one thread", _RUN, metavar="N", type=int, default=1),
    Option("--quick", "a fast smoke run: the --quick value of every option that has one "
           "(explicit options still win)", _RUN, flag=True),
    Option("--no-figures", "skip the PNG figures", _RUN, flag=True),
    Option("--quiet", "no progress bar and no notes on stderr", _RUN, flag=True),
)  # fmt: skip

# Names of run_experiments' arguments on the command line, for messages.
_OPTION_NAMES = {**{option.dest: option.name for option in OPTIONS}, "X": "--dataset"}


def build_parser():
    """The argparse parser of :data:`OPTIONS`, one argument group per ``group``."""
    parser = argparse.ArgumentParser(prog="python -m sknd.experiments", description=_DESCRIPTION)
    groups = {}
    for option in OPTIONS:
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        groups[option.group].add_argument(option.name, **_argparse_keywords(option))
    return parser


def _argparse_keywords(option):
    if option.flag:
        return {"action": "store_true", "help": option.help.replace("%", "%%")}
    help = option.help if option.required else f"{option.help} (default: {option.default_text})"
    keywords = {
        "help": help.replace("%", "%%"),
        "required": option.required,
        # Options with a --quick value stay None until _resolve knows whether it was given.
        "default": option.default if option.quick is None else None,
    }
    for key in ("metavar", "type", "choices"):
        if getattr(option, key) is not None:
            keywords[key] = getattr(option, key)
    return keywords


def options_markdown():
    """The option list of ``docs/experiments.md``: a Markdown table of :data:`OPTIONS`."""
    lines = ["| option | default | meaning |", "|---|---|---|"]
    group = None
    for option in OPTIONS:
        if option.group != group:
            group = option.group
            lines.append(f"| **{group}** | | |")
        meaning = option.help.replace("|", "\\|")  # a bare | would end the table's cell
        lines.append(f"| `{option.usage}` | {option.default_text} | {meaning} |")
    return "\n".join(lines) + "\n"


def _resolve(args):
    """Fill the unset options that have a --quick value from the quick or the full values."""
    for option in OPTIONS:
        if option.quick is not None and getattr(args, option.dest) is None:
            setattr(args, option.dest, option.quick if args.quick else option.default)
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
        key: getattr(args, key)
        for key in ("max_epochs", "patience", "hidden_units", "sensor", "pairs")
        if getattr(args, key) is not None
    }
    noise_levels = (
        PAPER_NOISE_LEVELS
        if args.noise_levels is None
        else [level / 100 for level in args.noise_levels]
    )
    try:
        data, output = _prepare(args, folds_given, estimator_params, noise_levels)
    except (ValueError, OSError) as exc:
        # A wrong path, column or option is a usage error: say so without a traceback.
        parser.error(str(exc))
    figures = not args.no_figures and _file_figures()
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


def _prepare(args, folds_given, estimator_params, noise_levels):
    """Load the data and refuse, before anything trains, what the run would refuse later;
    returns the data and the output folder."""
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
    _check_run(args, data, estimator_params, noise_levels)
    output = args.output or Path("results") / data.name
    _check_output(output)  # before anything trains, not when the report is written
    return data, output


def _check_run(args, data, estimator_params, noise_levels):
    """What run_experiments and the first fits would refuse, named as options."""
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
        options=_OPTION_NAMES,
    )
    if args.models is not None:
        specs_for(data.task, args.models)
    if args.sensor is not None:
        # The networks would fail on the first fit; say it now, naming the option.
        try:
            resolve_bands(None, feature_names=list(data.X.columns), sensor=args.sensor)
        except ValueError as exc:
            raise ValueError(f"--sensor {args.sensor}: {exc}") from None


def _file_figures():
    """Select matplotlib's file backend; False (with a warning) without matplotlib."""
    try:
        import matplotlib

        # Files only: no display is needed (or available on a server).
        matplotlib.use("Agg")
    except ImportError:
        warnings.warn("matplotlib is not installed: skipping the figures.", stacklevel=1)
        return False
    return True


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
        noise_kind=args.noise_kind,
        estimator_params=estimator_params,
        n_estimators=args.n_estimators,
        n_jobs=args.n_jobs,
        random_state=args.seed,
        verbose=0 if args.quiet else 1,
        dataset_name=data.name,
        target_names=data.target_names,
        notes=data.notes,
    )
