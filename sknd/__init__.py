"""sknd: learnable normalized-difference spectral indices as scikit-learn estimators."""

import importlib

from ._model_file import SavedModel, load_model
from ._version import __version__

__all__ = [
    "NDClassifier",
    "NDRegressor",
    "NDTransformer",
    "SavedModel",
    "__version__",
    "load_model",
]

# The estimators import torch and scikit-learn: loaded on first use, so that `import sknd`
# and loading a model file (sknd.load_model) stay quick and need neither.
_ESTIMATORS = {
    "NDClassifier": "._estimators._classifier",
    "NDRegressor": "._estimators._regressor",
    "NDTransformer": "._estimators._transformer",
}


def __getattr__(name):
    module = _ESTIMATORS.get(name)
    if module is None:
        raise AttributeError(f"module 'sknd' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_ESTIMATORS))
