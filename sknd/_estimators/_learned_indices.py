"""``transform`` to the learned indices, for the predictors."""

from sklearn.base import TransformerMixin
from sklearn.utils import TransformerTags
from sklearn.utils._set_output import _wrap_method_output
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from .._nd._pairs import index_names

__all__ = ["LearnedIndicesMixin", "names_of_indices"]


def names_of_indices(estimator, input_features, pairs):
    """``get_feature_names_out`` of a fitted ``estimator`` whose ``transform`` gives the
    learned indices of ``pairs`` (rows of ``pairs_``): ``nd_<band i>_<band j>``, bands named
    by ``input_features`` or else ``band_names_``."""
    if input_features is None:
        names = estimator.band_names_
    else:
        names = _check_feature_names_in(estimator, input_features)
    return index_names(names, pairs)


def _configured_output(method):
    """``method`` returning the container ``set_output`` configured (scikit-learn's wrapping).

    Applied here, under ``available_if``: the wrapping ``TransformerMixin`` applies itself
    to each class's own ``transform`` would turn the conditional method into a plain one.
    """
    return _wrap_method_output(method, "transform")


class LearnedIndicesMixin(TransformerMixin, auto_wrap_output_keys=None):
    """``transform`` to the learned indices, for the predictors (as scikit-learn's
    ``LinearDiscriminantAnalysis`` is a classifier and a transformer).

    Available for networks with an ND layer; the MLP baseline has no indices
    (no ``transform``, ``get_feature_names_out`` or ``set_output``, no
    transformer tags). ``set_output`` is scikit-learn's: the subclasses keep
    ``TransformerMixin``'s ``auto_wrap_output_keys`` (which enables it), and
    this mixin wraps its own ``transform`` (:func:`_configured_output`).
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags = (
            TransformerTags(preserves_dtype=["float64", "float32"])
            if self._learns_indices()
            else None
        )
        return tags

    def _learns_indices(self):
        """Whether the network has an ND layer (``transform``): not the MLP baseline."""
        params = getattr(self, "_network_params_", None) or self.get_params()
        return params["architecture"] != "mlp"

    @available_if(_learns_indices)
    @_configured_output
    def transform(self, X):
        """Compute the learned indices: the ND layer's outputs, one per row of ``indices_``.

        What :meth:`export_formulas` writes as formulas (its default order),
        for networks with an ND layer (not ``architecture="mlp"``). For the
        indices alone as features of other models, see
        :class:`sknd.NDTransformer`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        indices : ndarray of shape (n_samples, n_indices)
            Learned normalized differences in ``[-1, 1]``, in the order of
            ``pairs_``, in the dtype of ``X`` (float32 or float64). With
            ``architecture="attnd"`` these are the indices before gating.

        Examples
        --------
        >>> import numpy as np
        >>> from sknd import NDClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(200, 4))
        >>> y = (X[:, 3] > X[:, 2]).astype(int)
        >>> clf = NDClassifier(max_epochs=5, random_state=0).fit(X, y)
        >>> clf.transform(X).shape == (200, len(clf.indices_))
        True
        """
        check_is_fitted(self)
        X = self._validate_X(X)
        # The evaluator sknd.raster uses: a scene's pixels get these very values.
        return self._fast_evaluator("transform")(X, checked=True)

    @available_if(_learns_indices)
    def fit_transform(self, X, y=None, **fit_params):
        """Fit on ``X`` and ``y``, then return the learned indices of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            The target of ``fit``.
        **fit_params : dict
            Passed to ``fit`` (``sample_weight``, ``X_val``, ``y_val``, ``groups``).

        Returns
        -------
        indices : ndarray of shape (n_samples, n_indices)
            ``fit(X, y, **fit_params).transform(X)``.
        """
        return super().fit_transform(X, y, **fit_params)

    @available_if(_learns_indices)
    def get_feature_names_out(self, input_features=None):
        """Names of the learned indices, ``nd_<band i>_<band j>``, one per row of ``indices_``.

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
        return names_of_indices(self, input_features, self.pairs_)
