"""NDRegressor: regression with learnable normalized-difference indices."""

from sklearn.base import RegressorMixin, _fit_context

from .._data._tasks import RegressionTask
from .._docstrings import (
    ATTRIBUTES_DOC,
    FIT_OPTIONS_DOC,
    NOTES_DOC,
    PARAMETERS_DOC,
    Substitution,
)
from ._base import BaseND
from ._fit_guards import restore_on_failure, validation_data_by_keyword
from ._learned_indices import LearnedIndicesMixin

__all__ = ["NDRegressor"]


@Substitution(
    parameters=PARAMETERS_DOC,
    attributes=ATTRIBUTES_DOC,
    notes=NOTES_DOC,
)
class NDRegressor(RegressorMixin, LearnedIndicesMixin, BaseND):
    """Regressor whose first layer learns normalized-difference indices.

    The network of :class:`NDClassifier` with one linear output per target,
    trained with mean squared error on standardized targets (predictions are
    returned on the original scale). Early stopping monitors the validation
    loss.

    Parameters
    ----------
    {parameters}

    Attributes
    ----------
    {attributes}

    See Also
    --------
    NDClassifier : The same network for class labels.

    Notes
    -----
    {notes}

    Examples
    --------
    >>> import numpy as np
    >>> from sknd import NDRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.5, size=(300, 3))
    >>> y = (X[:, 2] - X[:, 1]) / (X[:, 2] + X[:, 1])  # an NDVI-like target
    >>> reg = NDRegressor(max_epochs=60, random_state=0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.9)
    True
    """

    def __init__(
        self,
        *,
        depth="auto",
        architecture="nd",
        hidden_units=None,
        epsilon=1e-6,
        variant="auto",
        pairs="auto",
        lr=0.01,
        weight_decay=1e-4,
        batch_size=32,
        max_epochs=150,
        early_stopping=True,
        patience=25,
        validation_fraction=0.2,
        device="cpu",
        random_state=None,
        verbose=0,
        bands=None,
        sensor=None,
        passthrough=False,
        recipe="sknd",
        warm_start=False,
        callbacks=None,
    ):
        super().__init__(
            depth=depth,
            architecture=architecture,
            hidden_units=hidden_units,
            epsilon=epsilon,
            variant=variant,
            pairs=pairs,
            lr=lr,
            weight_decay=weight_decay,
            batch_size=batch_size,
            max_epochs=max_epochs,
            early_stopping=early_stopping,
            patience=patience,
            validation_fraction=validation_fraction,
            device=device,
            random_state=random_state,
            verbose=verbose,
            bands=bands,
            sensor=sensor,
            passthrough=passthrough,
            recipe=recipe,
            warm_start=warm_start,
            callbacks=callbacks,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _make_task(self, y, sample_weight=None, classes=None):
        return RegressionTask(y, sample_weight)

    def _y_validation_kwargs(self):
        return {"multi_output": True, "y_numeric": True}

    @validation_data_by_keyword
    @restore_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    @Substitution(fit_options=FIT_OPTIONS_DOC)
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None, groups=None):
        """Train the network on band values ``X`` and targets ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values, at least two bands.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Continuous targets; several columns train one output unit each.
        {fit_options}

        Returns
        -------
        self : NDRegressor
            The fitted estimator.
        """
        self._fit(X, y, X_val, y_val, groups, sample_weight)
        return self

    @restore_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Train the network for one epoch on ``X`` and ``y`` (a part of the data).

        The first call builds the network from this part, including the
        scaling of the targets (see Notes); later calls continue it, with the
        optimizer's state of the previous call.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values of this part, with the bands of the first call.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Continuous targets of this part, with the columns of the first call.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample, relative to the other samples
            of this call.

        Returns
        -------
        self : NDRegressor
            The estimator, trained one more epoch.

        Examples
        --------
        >>> import numpy as np
        >>> from sknd import NDRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(2000, 4))
        >>> y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2])
        >>> reg = NDRegressor(random_state=0)
        >>> for part in np.array_split(np.arange(2000), 4):
        ...     reg = reg.partial_fit(X[part], y[part])
        >>> reg.n_iter_
        4
        """
        self._partial_fit(X, y, sample_weight=sample_weight)
        return self

    def predict(self, X):
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_targets)
            Predictions, shaped like the ``y`` seen in ``fit``.
        """
        output = self._network_output(X)
        return self._task.decode(output)
