"""NDTransformer: learned normalized-difference indices as features."""

from numbers import Integral

import numpy as np
from sklearn.base import TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._data._tasks import infer_task
from .._docstrings import (
    ATTRIBUTES_DOC,
    CLASS_WEIGHT_DOC,
    FIT_OPTIONS_DOC,
    NOTES_DOC,
    TRAIN_NOISE_DOC,
    TRANSFORMER_PARAMETERS_DOC,
    Substitution,
)
from ._base import CLASS_LABEL_CONSTRAINTS, BaseND
from ._fit_guards import restore_on_failure, validation_data_by_keyword
from ._learned_indices import names_of_indices

__all__ = ["NDTransformer"]


@Substitution(
    parameters=TRANSFORMER_PARAMETERS_DOC + CLASS_WEIGHT_DOC + TRAIN_NOISE_DOC,
    attributes=ATTRIBUTES_DOC,
    notes=NOTES_DOC,
)
class NDTransformer(TransformerMixin, BaseND):
    """Supervised transformer producing learned normalized-difference indices.

    Fits the network of :class:`NDClassifier` (class labels) or
    :class:`NDRegressor` (continuous targets) and transforms band values into
    the learned indices, ready to feed any other model. ``n_indices`` keeps the
    most important ones, ranked by ``index_importances_``: the norm of an
    index's outgoing weights in the next layer times its standard deviation on
    the training data (how far the index can move the network).

    Parameters
    ----------
    n_indices : int, default=None
        Number of indices to keep, most important first; ``None`` keeps all.
    {parameters}

    Attributes
    ----------
    selected_indices_ : ndarray of shape (n_indices,)
        Positions in ``pairs_`` of the indices returned by :meth:`transform`.
    {attributes}

    See Also
    --------
    NDClassifier, NDRegressor

    Notes
    -----
    {notes}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sknd import NDTransformer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.5, size=(200, 4))
    >>> y = (X[:, 3] > X[:, 2]).astype(int)
    >>> model = make_pipeline(NDTransformer(n_indices=2, max_epochs=30, random_state=0),
    ...                       LogisticRegression())
    >>> model.fit(X, y).predict(X[:3]).shape
    (3,)
    >>> model[0].get_feature_names_out()
    array(['nd_x...', 'nd_x...'], dtype=object)
    """

    _parameter_constraints = {
        **BaseND._parameter_constraints,
        "n_indices": [Interval(Integral, 1, None, closed="left"), None],
        "architecture": [StrOptions({"nd", "attnd"})],
        **CLASS_LABEL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        n_indices=None,
        depth=2,
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
        class_weight=None,
        train_noise="auto",
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
        self.class_weight = class_weight
        self.train_noise = train_noise
        self.n_indices = n_indices

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _class_label_params(self):
        return self.class_weight, self.train_noise

    def _make_task(self, y, sample_weight=None, classes=None):
        if np.ndim(y) == 2 and np.shape(y)[1] == 1:
            y = np.asarray(y)[:, 0]  # one target as a column, as NDClassifier accepts it
        return infer_task(y, sample_weight, classes)

    def _y_validation_kwargs(self):
        return {"multi_output": True}

    @validation_data_by_keyword
    @restore_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    @Substitution(fit_options=FIT_OPTIONS_DOC)
    def fit(self, X, y=None, sample_weight=None, *, X_val=None, y_val=None, groups=None):
        """Learn indices that predict ``y`` from band values ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values, at least two bands.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Class labels, or continuous targets (detected with
            :func:`sklearn.utils.multiclass.type_of_target`): the indices are
            learned by a classifier or a regressor network accordingly.
            Required: ``None`` (what ``fit_transform(X)`` passes without a
            target) raises a ``ValueError``.
        {fit_options}

        Returns
        -------
        self : NDTransformer
            The fitted transformer.
        """
        self._fit(X, y, X_val, y_val, groups, sample_weight)
        return self

    @restore_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Train the network for one epoch on ``X`` and ``y`` (a part of the data).

        The first call builds the network from this part (see Notes); later
        calls continue it, with the optimizer's state of the previous call.
        The learned indices (and their order by importance) follow each call.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values of this part, with the bands of the first call.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Class labels or continuous targets of this part.
        classes : array-like of shape (n_classes,), default=None
            Every class of the whole data set, for class labels on the first
            call (a part need not contain every class). ``None`` on the first
            call: the classes of this ``y``, or a continuous target
            (regression), detected as in ``fit``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample, relative to the other samples
            of this call.

        Returns
        -------
        self : NDTransformer
            The transformer, trained one more epoch.

        Examples
        --------
        >>> import numpy as np
        >>> from sknd import NDTransformer
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(2000, 4))
        >>> y = (X[:, 3] > X[:, 2]).astype(int)
        >>> nd = NDTransformer(n_indices=2, random_state=0)
        >>> for part in np.array_split(np.arange(2000), 4):
        ...     nd = nd.partial_fit(X[part], y[part], classes=[0, 1])
        >>> nd.transform(X).shape
        (2000, 2)
        """
        self._partial_fit(X, y, classes, sample_weight)
        return self

    def _finish_fit(self):
        n_pairs = len(self.pairs_)
        if self.n_indices is not None and self.n_indices > n_pairs:
            raise ValueError(
                f"n_indices={self.n_indices} exceeds the {n_pairs} band pairs of the ND layer; "
                f"use n_indices <= {n_pairs} or None to keep all."
            )
        order = np.argsort(-self.index_importances_, kind="stable")
        self.selected_indices_ = order[: self.n_indices]
        super()._finish_fit()

    def transform(self, X):
        """Compute the learned indices.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        indices : ndarray of shape (n_samples, n_indices)
            Learned normalized differences in ``[-1, 1]``, most important first,
            in the dtype of ``X`` (float32 or float64). With
            ``architecture="attnd"`` these are the indices before gating.
        """
        check_is_fitted(self)
        X = self._validate_X(X)
        # The evaluator sknd.raster uses: a scene's pixels get these very values.
        return self._fast_evaluator("transform")(X, checked=True)

    def _fast_evaluator(self, method):
        """``transform`` on pixel tables (see ``BaseND._fast_evaluator``), on the CPU."""
        if method != "transform":
            return None
        return self._indices_evaluator(self.selected_indices_)

    def _model_content(self):
        """The selected indices, what ``transform`` computes (see ``BaseND._model_content``)."""
        selected = self.selected_indices_
        return {
            "indices": {
                "kind": "nd",
                "pairs": np.asarray(self.pairs_[selected], dtype=np.int64),
                "a": np.asarray(self.coef_a_[selected], dtype=np.float64),
                "c": np.asarray(self.coef_c_[selected], dtype=np.float64),
                "epsilon": float(self.epsilon_),
                "variant": str(self.variant_),
            }
        }

    def get_feature_names_out(self, input_features=None):
        """Names of the learned indices, ``nd_<band i>_<band j>``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Band names; defaults to ``band_names_`` (the ``bands`` parameter,
            else ``feature_names_in_``, else ``x0, x1, ...``).

        Returns
        -------
        feature_names_out : ndarray of str objects
            One name per column of :meth:`transform`.
        """
        check_is_fitted(self)
        return names_of_indices(self, input_features, self.pairs_[self.selected_indices_])
