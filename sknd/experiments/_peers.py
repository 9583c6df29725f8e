"""Peer models a user would pick instead of a learnable normalized-difference network.

Every peer is a plain scikit-learn estimator (or pipeline) built from the fold's seed, so the
experiment runner can fit it on exactly the folds used for the ND, MLP and AttND models.
"""

from itertools import combinations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, clone
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from .._nd._formula import classic_index
from .._nd._pairs import index_names


def _classic_nd(values, pairs, epsilon):
    # The ND layer at initialisation; with negative values in a user's CSV, its "signed"
    # variant (smooth |b| in the denominator) keeps the index in [-1, 1].
    variant = "reflectance" if (values >= 0).all() else "signed"
    return classic_index(values, pairs, epsilon, variant)


class ClassicNDFeatures(TransformerMixin, BaseEstimator):
    """All pairwise normalized differences with fixed unit coefficients.

    Computes ``(b_i - b_j) / (b_i + b_j + epsilon)`` for every band pair ``i < j`` (for
    data with negative values, ``(b_i - b_j) / (r_i + r_j + epsilon)`` with the smooth
    ``r = sqrt(b**2 + epsilon)``): the classic "compute the indices, then classify"
    feature set (NDVI-like indices for all pairs) that a learnable ND layer generalises,
    which equals that layer at initialisation.

    Parameters
    ----------
    epsilon : float, default=1e-6
        Added to the denominator to keep all-zero pairs finite.

    Attributes
    ----------
    pairs_ : ndarray of shape (n_pairs, 2)
        Band index pairs in :func:`itertools.combinations` order.
    n_features_in_ : int
        Number of bands seen in fit.
    feature_names_in_ : ndarray of str
        Band names, when fitted on a DataFrame with string columns.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import ClassicNDFeatures
    >>> X = np.array([[0.1, 0.5, 0.3]])
    >>> ClassicNDFeatures().fit_transform(X).round(3)
    array([[-0.667, -0.5  ,  0.25 ]])
    """

    def __init__(self, epsilon=1e-6):
        self.epsilon = epsilon

    def fit(self, X, y=None):
        """Record the band count and the band pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_bands)
            Band values.
        y : None
            Ignored.

        Returns
        -------
        self : ClassicNDFeatures
            The fitted transformer.
        """
        X = validate_data(self, X, reset=True, dtype=np.float64)
        self.pairs_ = np.array(list(combinations(range(X.shape[1]), 2)), dtype=int).reshape(-1, 2)
        return self

    def transform(self, X):
        """Compute the classic index of every band pair.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_bands)
            Band values.

        Returns
        -------
        indices : ndarray of shape (n_samples, n_pairs)
            One column per pair, in :attr:`pairs_` order.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return _classic_nd(X, self.pairs_, self.epsilon)

    def get_feature_names_out(self, input_features=None):
        """Names ``nd_<band_i>_<band_j>`` of the output columns.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Band names; None uses the names seen in fit (or ``x0, x1...``).

        Returns
        -------
        names : ndarray of str
            One name per band pair.
        """
        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        return index_names(names, self.pairs_)


class _BestPair(BaseEstimator):
    """Exhaustive search of the best single classic ND; subclasses pick the model on it."""

    def __init__(self, estimator=None, epsilon=1e-6):
        self.estimator = estimator
        self.epsilon = epsilon

    def fit(self, X, y, X_val=None, y_val=None):
        """Fit a copy of the estimator on every pair's index and keep the best pair.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_bands)
            Band values, at least two bands.
        y : array-like of shape (n_samples,)
            Targets.
        X_val, y_val : array-like, default=None
            Data on which the pairs are compared; None means the training data.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, reset=True, dtype=np.float64)
        if X.shape[1] < 2:
            raise ValueError(f"{type(self).__name__} needs at least two bands.")
        if X_val is None:
            X_val, y_val = X, y
        else:
            X_val = validate_data(self, X_val, reset=False, dtype=np.float64)
        pairs = np.array(list(combinations(range(X.shape[1]), 2)), dtype=int)
        features = _classic_nd(X, pairs, self.epsilon)
        features_val = _classic_nd(X_val, pairs, self.epsilon)
        base = self._base(y)
        scores = self._pair_scores(base, features, y, features_val, y_val)
        best = int(np.nanargmax(scores))
        names = getattr(self, "feature_names_in_", [f"x{i}" for i in range(X.shape[1])])
        self.pair_ = (int(pairs[best, 0]), int(pairs[best, 1]))
        self.pair_names_ = (str(names[self.pair_[0]]), str(names[self.pair_[1]]))
        self.selection_scores_ = scores
        self.estimator_ = clone(base).fit(features[:, [best]], y)
        return self

    def _pair_scores(self, base, features, y, features_val, y_val):
        """Validation score of ``base`` fitted on each column of ``features`` alone."""
        scores = np.empty(features.shape[1])
        for k in range(features.shape[1]):
            model = clone(base).fit(features[:, [k]], y)
            scores[k] = model.score(features_val[:, [k]], y_val)
        return scores

    def _index(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return _classic_nd(X, np.array([self.pair_]), self.epsilon)

    def predict(self, X):
        """Predict from the selected index.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_bands)
            Band values.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions of the estimator on the selected index.
        """
        return self.estimator_.predict(self._index(X))


class BestPairNDClassifier(ClassifierMixin, _BestPair):
    """Classifier on the single best classic normalized difference, found by exhaustive search.

    For every band pair the unit-coefficient index ``(b_i - b_j) / (b_i + b_j)`` is
    computed and a copy of ``estimator`` is fitted on it alone; the pair with the highest
    accuracy on the validation set (or, without one, on the training set) is kept. This is
    the "find the best NDVI-like index, then threshold it" workflow.

    Parameters
    ----------
    estimator : classifier, default=None
        Fitted on the one-column index. None means thresholds on the index: a
        :class:`~sklearn.tree.DecisionTreeClassifier` with one leaf per class (K - 1
        thresholds for K classes), like "NDVI > 0.3 is vegetation".
    epsilon : float, default=1e-6
        Added to the index denominator.

    Attributes
    ----------
    pair_ : tuple of int
        Selected band indices ``(i, j)``.
    pair_names_ : tuple of str
        Their feature names (``"x0"``... without DataFrame input).
    estimator_ : classifier
        The estimator fitted on the selected index.
    selection_scores_ : ndarray of shape (n_pairs,)
        Selection accuracy of every pair, in :func:`itertools.combinations` order.
    classes_ : ndarray
        Class labels.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import BestPairNDClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(1, 10, size=(300, 4))
    >>> y = (X[:, 3] > X[:, 1]).astype(int)
    >>> BestPairNDClassifier().fit(X, y).pair_
    (1, 3)
    """

    def _base(self, y):
        if self.estimator is None:
            n_classes = len(np.unique(y))
            return DecisionTreeClassifier(max_leaf_nodes=max(n_classes, 2), random_state=0)
        return self.estimator

    def fit(self, X, y, X_val=None, y_val=None):
        """Fit a copy of the estimator on every pair's index and keep the most accurate pair.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_bands)
            Band values, at least two bands.
        y : array-like of shape (n_samples,)
            Class labels.
        X_val, y_val : array-like, default=None
            Data on which the pairs are compared; None means the training data.

        Returns
        -------
        self : BestPairNDClassifier
            The fitted classifier.
        """
        super().fit(X, y, X_val=X_val, y_val=y_val)
        self.classes_ = self.estimator_.classes_
        return self

    def predict_proba(self, X):
        """Class probabilities from the selected index.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_bands)
            Band values.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the estimator on the selected index.
        """
        return self.estimator_.predict_proba(self._index(X))


class BestPairNDRegressor(RegressorMixin, _BestPair):
    """Regressor on the single best classic normalized difference, found by exhaustive search.

    The regression twin of :class:`BestPairNDClassifier`: a linear regression on one
    unit-coefficient index ``(b_i - b_j) / (b_i + b_j)`` (like "yield is linear in NDVI"),
    the pair chosen by R² on the validation set (or the training set without one).

    Parameters
    ----------
    estimator : regressor, default=None
        Fitted on the one-column index; None means
        :class:`~sklearn.linear_model.LinearRegression`.
    epsilon : float, default=1e-6
        Added to the index denominator.

    Attributes
    ----------
    pair_ : tuple of int
        Selected band indices ``(i, j)``.
    pair_names_ : tuple of str
        Their feature names (``"x0"``... without DataFrame input).
    estimator_ : regressor
        The estimator fitted on the selected index.
    selection_scores_ : ndarray of shape (n_pairs,)
        Selection R² of every pair, in :func:`itertools.combinations` order.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import BestPairNDRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(1, 10, size=(300, 4))
    >>> y = 3 * (X[:, 3] - X[:, 1]) / (X[:, 3] + X[:, 1])
    >>> BestPairNDRegressor().fit(X, y).pair_
    (1, 3)
    """

    def _base(self, y):
        return LinearRegression() if self.estimator is None else self.estimator

    def _pair_scores(self, base, features, y, features_val, y_val):
        if self.estimator is not None or np.ndim(y) != 1:
            return super()._pair_scores(base, features, y, features_val, y_val)
        # Least squares on one column has a closed form: score all pairs at once (tens of
        # thousands of pairs with hundreds of bands) instead of one LinearRegression each.
        y, y_val = np.asarray(y, dtype=np.float64), np.asarray(y_val, dtype=np.float64)
        centred = features - features.mean(axis=0)
        variance = np.einsum("ij,ij->j", centred, centred)
        covariance = centred.T @ (y - y.mean())
        # A constant column gets slope 0, as LinearRegression's minimum-norm solution.
        slope = np.divide(covariance, variance, out=np.zeros_like(variance), where=variance > 0)
        intercept = y.mean() - slope * features.mean(axis=0)
        total = np.sum((y_val - y_val.mean()) ** 2)
        scores = np.empty(features.shape[1])
        for start in range(0, features.shape[1], 4096):
            part = slice(start, start + 4096)
            residual = y_val[:, None] - (features_val[:, part] * slope[part] + intercept[part])
            error = np.einsum("ij,ij->j", residual, residual)
            # r2_score's convention for a constant target: 1 if perfect, else 0.
            scores[part] = 1 - error / total if total > 0 else (error == 0).astype(float)
        return scores


def sklearn_mlp_params(depth, n_hidden, settings, validation_fraction, random_state):
    """Map the paper's training settings onto scikit-learn's ``MLPClassifier`` / ``MLPRegressor``.

    ``depth`` counts input and output layers as in the paper, so there are ``depth - 1``
    hidden layers of ``n_hidden`` units. Adam with ``lr`` becomes ``solver="adam"``,
    ``learning_rate_init``; ``weight_decay`` becomes ``alpha`` (note: scikit-learn divides
    the L2 gradient by the batch size, torch's Adam weight decay does not, so the effective
    penalty is ``batch_size`` times weaker); ``max_epochs`` becomes ``max_iter`` and
    ``patience`` becomes ``n_iter_no_change`` of the built-in early stopping, which scores
    accuracy (R² for the regressor) on an internal hold-out of
    ``validation_fraction``, drawn at random (stratified for the classifier), not by group.

    Parameters
    ----------
    depth : int
        Network depth, input and output layers included.
    n_hidden : int
        Units per hidden layer.
    settings : dict
        ``lr``, ``weight_decay``, ``batch_size``, ``max_epochs``, ``early_stopping``,
        ``patience``.
    validation_fraction : float
        Share held out for early stopping.
    random_state : int
        Seed.

    Returns
    -------
    params : dict
        Keyword arguments of the scikit-learn MLP.

    Examples
    --------
    >>> from sknd.experiments import PAPER_SETTINGS, sklearn_mlp_params
    >>> sklearn_mlp_params(3, 36, PAPER_SETTINGS, 0.2, 0)["hidden_layer_sizes"]
    (36, 36)
    """
    return {
        "hidden_layer_sizes": (n_hidden,) * (depth - 1),
        "solver": "adam",
        "learning_rate_init": settings["lr"],
        "alpha": settings["weight_decay"],
        "batch_size": settings["batch_size"],
        "max_iter": settings["max_epochs"],
        "early_stopping": settings["early_stopping"],
        "n_iter_no_change": settings["patience"],
        "validation_fraction": validation_fraction,
        "random_state": random_state,
    }


def count_parameters(estimator):
    """Number of fitted parameters of a model, for the efficiency table.

    sknd estimators report ``n_parameters_``; for linear models and MLPs the weights and
    intercepts are counted (scaler statistics are not); for the best-pair classifier the
    model on the index (the pair itself is a discrete choice); for trees and forests the
    number of tree nodes (thresholds and leaves), which is not comparable with the others.
    """
    if isinstance(estimator, Pipeline):
        return count_parameters(estimator[-1])
    if isinstance(estimator, GridSearchCV):
        return count_parameters(estimator.best_estimator_)
    if hasattr(estimator, "n_parameters_"):
        return int(estimator.n_parameters_)
    if isinstance(estimator, _BestPair):
        return count_parameters(estimator.estimator_)
    if hasattr(estimator, "coefs_"):
        return int(
            sum(w.size for w in estimator.coefs_) + sum(b.size for b in estimator.intercepts_)
        )
    if hasattr(estimator, "estimators_"):
        return int(sum(tree.tree_.node_count for tree in estimator.estimators_))
    if hasattr(estimator, "tree_"):
        return int(estimator.tree_.node_count)
    if hasattr(estimator, "coef_"):
        return int(np.size(estimator.coef_) + np.size(getattr(estimator, "intercept_", 0)))
    raise TypeError(f"Cannot count the parameters of {type(estimator).__name__}.")
