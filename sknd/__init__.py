"""sknd: learnable normalized-difference spectral indices as scikit-learn estimators."""

__version__ = "0.1.0.dev0"

from ._classifier import NDClassifier  # noqa: E402
from ._regressor import NDRegressor  # noqa: E402
from ._transformer import NDTransformer  # noqa: E402

__all__ = ["NDClassifier", "NDRegressor", "NDTransformer", "__version__"]
