"""NDClassifier: classification with learnable normalized-difference indices."""

from sklearn.base import ClassifierMixin, _fit_context

from .._data._tasks import ClassificationTask
from .._docstrings import (
    ATTRIBUTES_DOC,
    CLASS_WEIGHT_DOC,
    FIT_OPTIONS_DOC,
    NOTES_DOC,
    PARAMETERS_DOC,
    TRAIN_NOISE_DOC,
    Substitution,
)
from ._base import CLASS_LABEL_CONSTRAINTS, BaseND
from ._fit_guards import restore_on_failure, validation_data_by_keyword
from ._learned_indices import LearnedIndicesMixin

__all__ = ["NDClassifier"]


@Substitution(
    parameters=PARAMETERS_DOC + CLASS_WEIGHT_DOC + TRAIN_NOISE_DOC,
    attributes=ATTRIBUTES_DOC,
    notes=NOTES_DOC,
)
class NDClassifier(ClassifierMixin, LearnedIndicesMixin, BaseND):
    """Classifier whose first layer learns normalized-difference indices.

    Every band pair ``(i, j)`` becomes an index
    ``(sp(a) b_i - sp(c) b_j) / (sp(a) b_i + sp(c) b_j + epsilon)`` with learned
    weights (``sp`` = softplus, ``a = c = 0`` at start: the classic index), fed
    to a small dense network. Binary targets use one logit and binary
    cross-entropy, multiclass targets softmax and cross-entropy.

    Parameters
    ----------
    {parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    {attributes}

    See Also
    --------
    NDRegressor : The same network for continuous targets.
    NDTransformer : The learned indices as features for other models.

    Notes
    -----
    {notes}

    Examples
    --------
    >>> import numpy as np
    >>> from sknd import NDClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.5, size=(200, 4))   # four reflectance bands
    >>> y = (X[:, 3] > X[:, 2]).astype(int)         # "NIR brighter than red"
    >>> clf = NDClassifier(max_epochs=40, random_state=0).fit(X, y)
    >>> clf.n_parameters_
    19
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **BaseND._parameter_constraints,
        **CLASS_LABEL_CONSTRAINTS,
    }

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Normalized differences keep only band ratios. On scikit-learn's reference problem
        # (3 Gaussian blobs in 2 features, shifted to be non-negative) no function of the
        # ratio b0/b1 reaches the accuracy its check calls "reasonable"
        # (tests/estimators/test_estimators.py::test_poor_score_tag_is_true measures the
        # best). The MLP and the raw-band passthrough see the bands themselves and pass.
        tags.classifier_tags.poor_score = self.architecture != "mlp" and not self.passthrough
        return tags

    def _make_task(self, y, sample_weight=None, classes=None):
        return ClassificationTask(y, classes)

    def _class_label_params(self):
        return self.class_weight, self.train_noise

    @validation_data_by_keyword
    @restore_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    @Substitution(fit_options=FIT_OPTIONS_DOC)
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None, groups=None):
        """Train the network on band values ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values, at least two bands.
        y : array-like of shape (n_samples,)
            Class labels of any type.
        {fit_options}

        Returns
        -------
        self : NDClassifier
            The fitted estimator.
        """
        self._fit(X, y, X_val, y_val, groups, sample_weight)
        return self

    @restore_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Train the network for one epoch on ``X`` and ``y`` (a part of the data).

        The first call builds the network from this part (see Notes); later
        calls continue it, with the optimizer's state of the previous call.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values of this part, with the bands of the first call.
        y : array-like of shape (n_samples,)
            Class labels of this part, all in ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every class of the whole data set. Required on the first call
            (a part need not contain every class); later calls may omit it or
            pass the same classes.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample, relative to the other samples
            of this call.

        Returns
        -------
        self : NDClassifier
            The estimator, trained one more epoch.

        Examples
        --------
        >>> import numpy as np
        >>> from sknd import NDClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(2000, 4))
        >>> y = (X[:, 3] > X[:, 2]).astype(int)
        >>> clf = NDClassifier(random_state=0)
        >>> for epoch in range(5):
        ...     for part in np.array_split(np.arange(2000), 4):
        ...         clf = clf.partial_fit(X[part], y[part], classes=[0, 1])
        >>> clf.n_iter_
        20
        >>> bool(clf.score(X, y) > 0.9)
        True
        """
        if classes is None and not hasattr(self, "_module"):
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every class of "
                "the whole data set, e.g. classes=np.unique(y_all), since a part of the data "
                "need not contain them all."
            )
        self._partial_fit(X, y, classes, sample_weight)
        return self

    def _finish_fit(self):
        self.classes_ = self._task.classes
        super()._finish_fit()

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``.
        """
        output = self._network_output(X)
        return self._task.proba(output)

    def decision_function(self, X):
        """The network's raw outputs: the logits of the classes.

        As for scikit-learn's ``MLPClassifier`` and linear models: for two
        classes, the logit of ``classes_[1]`` (positive: ``classes_[1]`` is
        predicted); otherwise one logit per class, whose softmax is
        ``predict_proba`` and whose argmax ``predict``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Logits, float64.

        Examples
        --------
        >>> import numpy as np
        >>> from sknd import NDClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(200, 4))
        >>> y = (X[:, 3] > X[:, 2]).astype(int)
        >>> clf = NDClassifier(max_epochs=5, random_state=0).fit(X, y)
        >>> bool(np.array_equal(clf.decision_function(X) > 0, clf.predict(X) == 1))
        True
        """
        output = self._network_output(X)
        return output[:, 0] if output.shape[1] == 1 else output

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        output = self._network_output(X)
        return self._task.decode(output)
