"""The paper's experiments, on the shipped datasets or on any CSV of band values.

Run ``python -m sknd.experiments --dataset forest_type`` for the full protocol (10-fold
cross-validation of the ND, MLP and AttND networks at depths 2-4 and of scikit-learn peers,
noise robustness, illumination check) with a Markdown report, CSV results and figures; see
``python -m sknd.experiments --help`` and ``docs/experiments.md``. The building blocks are
importable for use in notebooks.
"""

from ._cli import main
from ._data import load_experiment_data
from ._noise import add_multiplicative_noise, illumination_check, noise_robustness
from ._peers import BestPairNDClassifier, ClassicNDFeatures, sklearn_mlp_params
from ._protocol import (
    MODELS,
    PAPER_MODELS,
    PAPER_SETTINGS,
    ExperimentResults,
    run_experiments,
)
from ._report import write_report
from ._splits import paper_splits
from ._tables import accuracy_table, noise_drop_table, paired_ttest, parameter_table

__all__ = [
    "MODELS",
    "PAPER_MODELS",
    "PAPER_SETTINGS",
    "BestPairNDClassifier",
    "ClassicNDFeatures",
    "ExperimentResults",
    "accuracy_table",
    "add_multiplicative_noise",
    "illumination_check",
    "load_experiment_data",
    "main",
    "noise_drop_table",
    "noise_robustness",
    "paired_ttest",
    "paper_splits",
    "parameter_table",
    "run_experiments",
    "sklearn_mlp_params",
    "write_report",
]
