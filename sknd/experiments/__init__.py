"""The paper's experiments, on the shipped datasets or on any CSV of band values.

Run ``python -m sknd.experiments --dataset forest_type`` for the full protocol (10-fold
cross-validation of the ND, MLP and AttND networks at depths 2-4 and of scikit-learn peers,
noise robustness, illumination check) with a Markdown report, CSV results and figures;
``--task regression`` evaluates continuous targets, ``--groups`` and ``--spatial-blocks``
keep correlated samples on one side of every split. See
``python -m sknd.experiments --help`` and ``docs/experiments.md``. The building blocks are
importable for use in notebooks; the compared models are the rows of a table of
:class:`ModelSpec` (:func:`specs_for`), so a new row is one :func:`network_spec` call.
"""

from ._cli import main
from ._data import load_experiment_data
from ._noise import (
    add_additive_noise,
    add_multiplicative_noise,
    illumination_check,
    noise_robustness,
)
from ._peers import (
    BestPairNDClassifier,
    BestPairNDRegressor,
    ClassicNDFeatures,
    sklearn_mlp_params,
)
from ._protocol import MODELS, PAPER_MODELS, ExperimentResults, run_experiments
from ._report import write_report
from ._specs import (
    FIXED_INDEX_BASELINE,
    MODEL_SPECS,
    PAPER_SETTINGS,
    ModelSpec,
    network_spec,
    specs_for,
)
from ._splits import check_groups, experiment_splits, paper_splits, spatial_blocks
from ._tables import accuracy_table, noise_drop_table, paired_ttest, parameter_table

__all__ = [
    "FIXED_INDEX_BASELINE",
    "MODELS",
    "MODEL_SPECS",
    "PAPER_MODELS",
    "PAPER_SETTINGS",
    "BestPairNDClassifier",
    "BestPairNDRegressor",
    "ClassicNDFeatures",
    "ExperimentResults",
    "ModelSpec",
    "accuracy_table",
    "add_additive_noise",
    "add_multiplicative_noise",
    "check_groups",
    "experiment_splits",
    "illumination_check",
    "load_experiment_data",
    "main",
    "network_spec",
    "noise_drop_table",
    "noise_robustness",
    "paired_ttest",
    "paper_splits",
    "parameter_table",
    "run_experiments",
    "sklearn_mlp_params",
    "spatial_blocks",
    "specs_for",
    "write_report",
]
