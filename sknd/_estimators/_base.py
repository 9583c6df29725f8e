"""What the sknd estimators share: parameters, input validation, fitting, inference and
persistence.

:class:`BaseND` checks the data of a ``fit`` or ``partial_fit`` call and hands the training to
one :class:`~sknd._estimators._fit.Fit` (:mod:`sknd._estimators._fit`: the fit's state and its
stages), then reads the fitted attributes off the trained net
(:mod:`sknd._estimators._fitted_state`). The validation split and the parameters the network
is made of are :mod:`sknd._estimators._fit_data`; the methods that write the model out are
:mod:`sknd._estimators._export_methods` (:class:`~sknd._estimators._export_methods.ExportMixin`),
``transform`` to the learned indices :mod:`sknd._estimators._learned_indices`.
"""

import copy
import io
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data._parts import Part
from .._data._tasks import check_label_kinds
from .._data._validation import (
    check_band_values,
    check_min_bands,
    densify,
    locate,
    non_numeric_error,
    plain_values,
    reject_images,
    warn_about_training_values,
)
from .._data._variant import choose_variant
from .._data._weights import fit_weights, merge_duplicates
from .._inference._device_choice import inference_device, resolve_device
from .._nd._formula import EPSILON_RANGE, VARIANTS
from .._threads import one_thread
from .._training._recipe import RECIPES
from .._version import __version__
from ..bands import resolve_bands
from ..inspection import index_table
from ..networks import (
    ARCHITECTURES,
    describe,
    first_nd_layer,
    forward_rows,
    rows_per_pass,
)
from ._export_methods import ExportMixin
from ._fit import Fit, Previous, Settings
from ._fit_data import NETWORK_PARAMS, check_network_params, matching_outputs, split_validation
from ._fitted_state import fitted_attributes

__all__ = []


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _on_cpu(state):
    """A copy of ``state`` with every tensor on the CPU.

    The network, and the fitted skorch net that holds it (its optimizer, and callbacks
    that refer to either), copied together: ``net_.module_`` stays the network.
    """
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, map_location="cpu", weights_only=False)


#: Parameters of the estimators that take class labels (NDClassifier, NDTransformer).
CLASS_LABEL_CONSTRAINTS = {
    "class_weight": [dict, StrOptions({"balanced"}), None],
    "train_noise": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
}


class BaseND(ExportMixin, BaseEstimator, metaclass=ABCMeta):
    """Parameters, validation, fitting, inference and persistence shared by all sknd
    estimators.

    ``_fit`` and ``_partial_fit`` check the data and train through a
    :class:`~sknd._estimators._fit.Fit`; the export methods come from
    :class:`~sknd._estimators._export_methods.ExportMixin`. Subclasses set
    ``_make_task(y, sample_weight, classes)`` (a task from :mod:`sknd._data._tasks`), their
    own prediction methods, what ``_finish_fit`` adds and, where they take class labels,
    ``_class_label_params``.
    """

    # The HTML repr's links (scikit-learn's _HTMLDocumentationLinkMixin: the "?" of the
    # estimator, each parameter's name with its docstring as a pop-up) lead to the estimator's
    # API page, api/generated/sknd.<Name>.html of the docs site (docs/, `make docs`). The site
    # is not hosted yet: an empty template draws none of them. Once it is, the template is
    # "<site>/api/generated/{estimator_module}.{estimator_name}.html".
    _doc_link_module = "sknd"
    _doc_link_template = ""

    _parameter_constraints = {
        "depth": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "architecture": [StrOptions(set(ARCHITECTURES))],
        "hidden_units": [Interval(Integral, 1, None, closed="left"), None],
        "epsilon": [Interval(Real, *EPSILON_RANGE, closed="both")],
        "variant": [StrOptions({*VARIANTS, "auto"})],
        "pairs": [
            StrOptions({"all", "auto"}),
            Interval(Integral, 1, None, closed="left"),
            "array-like",
        ],
        # Up to the float32 maximum: the optimizer computes in float32.
        "lr": [Interval(Real, 0, _FLOAT32_MAX, closed="right")],
        "weight_decay": [Interval(Real, 0, _FLOAT32_MAX, closed="both")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "patience": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        # Any device torch.device accepts ("cuda:1", "mps"), or "auto": checked at fit by
        # PyTorch itself (sknd._inference._device_choice.resolve_device), with what to change.
        "device": [str, torch.device],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "bands": ["array-like", None],
        "sensor": [str, None],
        "passthrough": ["boolean"],
        "recipe": [StrOptions(set(RECIPES))],
        "warm_start": ["boolean"],
        # Checked at fit (sknd._training._user_callbacks.user_callbacks), with what to change.
        "callbacks": [list, None],
    }

    # As scikit-learn's BaseMultilayerPerceptron: no defaults here, each public estimator
    # writes its own keyword-only __init__ (the signature users and get_params see).
    @abstractmethod
    def __init__(
        self,
        *,
        depth,
        architecture,
        hidden_units,
        epsilon,
        variant,
        pairs,
        lr,
        weight_decay,
        batch_size,
        max_epochs,
        early_stopping,
        patience,
        validation_fraction,
        device,
        random_state,
        verbose,
        bands,
        sensor,
        passthrough,
        recipe,
        warm_start,
        callbacks,
    ):
        self.depth = depth
        self.architecture = architecture
        self.hidden_units = hidden_units
        self.epsilon = epsilon
        self.variant = variant
        self.pairs = pairs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.early_stopping = early_stopping
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.bands = bands
        self.sensor = sensor
        self.passthrough = passthrough
        self.recipe = recipe
        self.warm_start = warm_start
        self.callbacks = callbacks

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = self.variant == "reflectance"
        # Sparse input is made dense (up to MAX_SPARSE_DENSIFY_SIZE values).
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ validation
    def _validate_bands(self, X, y=None, *, reset, name="X"):
        """``validate_data`` plus the checks band values need (see :mod:`sknd._data._validation`).

        Returns ``X``, or ``(X, y)`` when ``y`` is given. Sparse ``X`` is made
        dense; NaN, infinite, overflowing and (for reflectance) negative values
        raise a ``ValueError`` that says where they are and what to do.
        """
        estimator_name = type(self).__name__
        reject_images(X, name, estimator_name)
        X = plain_values(X, name, estimator_name)
        source_dtype = getattr(X, "dtype", None)
        columns = getattr(X, "columns", None)  # to name bad columns as the user knows them
        kwargs = dict(
            reset=reset,
            dtype=[np.float64, np.float32],
            accept_sparse=True,
            # Checked below, with the positions of the bad values and the fix.
            ensure_all_finite=False,
        )
        try:
            if y is None:
                X = validate_data(self, X, **kwargs)
            else:
                X, y = validate_data(self, X, y, **kwargs, **self._y_validation_kwargs())
        except (ValueError, TypeError) as exc:
            error = non_numeric_error(X, name, exc)
            if error is not None:
                raise error from exc
            raise
        if sp.issparse(X):
            X = densify(X, name, estimator_name)
        if reset:
            check_min_bands(X, estimator_name)
        if columns is None:
            columns = getattr(self, "feature_names_in_", None)
        check_band_values(
            X,
            name=name,
            estimator_name=estimator_name,
            feature_names=columns,
            non_negative=self._fitted_param("variant") == "reflectance",
            source_dtype=source_dtype,
            # Predictions only: training data (partial_fit, warm start) extends the range.
            band_range=None if reset or y is not None else self._band_range_to_check(),
        )
        return X if y is None else (X, y)

    def _record_band_range(self, X, continuing):
        """Set ``band_range_``: each band's extremes over the data fitted on so far."""
        low, high = X.min(axis=0), X.max(axis=0)
        previous = getattr(self, "band_range_", None) if continuing else None
        if previous is not None and len(previous) == len(low):
            low, high = np.minimum(low, previous[:, 0]), np.maximum(high, previous[:, 1])
        self.band_range_ = np.column_stack([low, high]).astype(np.float64)

    def _band_range_to_check(self):
        """``band_range_`` where values far outside it warn, else None (internal hook of
        :mod:`sknd._model_file`).

        Only for networks that see raw band values (``passthrough=True``, the
        MLP), as fitted: normalized differences do not change when all bands
        are scaled by one factor, so an ND network takes digital numbers as it
        takes reflectance.
        """
        fitted = getattr(self, "_network_params_", None)
        if fitted is None or not (fitted["passthrough"] or fitted["architecture"] == "mlp"):
            return None
        return getattr(self, "band_range_", None)

    def _fitted_param(self, name):
        """``epsilon`` or ``variant`` as fitted (``epsilon_``), the parameter before fit
        (internal hook of :mod:`sknd.onnx`)."""
        return getattr(self, f"{name}_", getattr(self, name))

    def _check_params(self):
        """Validate the parameters as ``fit`` does, before any data (internal hook of
        :mod:`sknd.experiments`, which checks a run's estimator parameters up front)."""
        self._validate_params()

    def _fitted_band_names(self):
        """``band_names_`` when ``bands=`` named the bands at fit, else None (internal hook
        of :mod:`sknd.raster` and :mod:`sknd._model_file`).

        Names given by ``bands=`` must be found in an image, as DataFrame columns
        (``feature_names_in_``) are; names made up for unnamed columns are not.
        """
        return self.band_names_ if getattr(self, "_band_names_given", False) else None

    def _validate_X(self, X):
        """Validate ``X`` at prediction time against what ``fit`` saw."""
        return self._validate_bands(X, reset=False)

    def _validate_X_y(self, X, y, reset, name="X"):
        """Validate training (``reset=True``) or validation data with its target."""
        if y is None:
            estimator_name = type(self).__name__
            raise ValueError(
                f"This {estimator_name} estimator requires y to be passed, but the target y is "
                f"None. {estimator_name} is supervised: it learns the indices that best predict "
                "y, so pass the target (class labels or continuous values) as fit(X, y)."
            )
        check_label_kinds(y, "y" + name[1:])  # before numpy turns [1, "a"] into text
        X, y = self._validate_bands(X, y, reset=reset, name=name)
        if reset:
            self.variant_ = choose_variant(
                self.variant,
                X,
                estimator_name=type(self).__name__,
                feature_names=getattr(self, "feature_names_in_", None),
                verbose=self.verbose,
            )
            warn_about_training_values(
                X,
                epsilon=self.epsilon,
                variant=self.variant_,
                nd_layer=self.architecture != "mlp",
                estimator_name=type(self).__name__,
            )
        return X, y

    def _y_validation_kwargs(self):
        """Extra ``validate_data`` arguments for ``y`` (overridden for regression)."""
        return {}

    def _class_label_params(self):
        """``(class_weight, train_noise)``: the parameters of the estimators that take class
        labels (:data:`CLASS_LABEL_CONSTRAINTS`), which return theirs; none here."""
        return None, 0.0

    # ------------------------------------------------------------------ fitting
    @one_thread()
    def _fit(self, X, y, X_val=None, y_val=None, groups=None, sample_weight=None):
        """``fit``: train a new network, or continue the fitted one with ``warm_start``."""
        continuing = self.warm_start and hasattr(self, "_module")
        how = "warm_start=True"
        if continuing:
            data, task, groups = self._continued_data(X, y, sample_weight, how, groups)
        else:
            data, task, groups = self._new_data(X, y, sample_weight, None, groups)
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        device = resolve_device(self.device)
        train, valid = self._validation_split(data, task, X_val, y_val, seed, groups)
        fit = Fit(self._fit_settings(), task, seed, device, train, valid)
        fit.run(self._previous() if continuing else None)
        self._set_fitted_state(fit.net, task, fit.pairs, train)
        if not continuing:
            self.depth_ = fit.depth
        self.learning_gain_ = fit.gain
        self.start_regularization_ = fit.penalty
        # partial_fit after fit starts a new optimizer (as after a warm start).
        self._optimizer_state = None
        self._finish_fit()

    @one_thread()
    def _partial_fit(self, X, y, classes=None, sample_weight=None):
        """``partial_fit``: one epoch over ``X``; the first call builds the network."""
        continuing = hasattr(self, "_module")
        if continuing and classes is not None:
            fitted = getattr(self._task, "classes", None)
            if fitted is None or not np.array_equal(np.unique(classes), fitted):
                raise ValueError(
                    f"classes={classes!r} differs from the classes of the fitted model "
                    f"({fitted!r}): pass classes only on the first call to partial_fit, or "
                    "the same ones."
                )
        if self._class_label_params()[0] == "balanced":
            raise ValueError(
                "class_weight='balanced' needs the class counts of all the data, which "
                "partial_fit sees one part at a time. Compute the weights once with "
                "sklearn.utils.class_weight.compute_class_weight('balanced', classes=classes, "
                "y=y) and pass them as a dict: class_weight=dict(zip(classes, weights))."
            )
        if continuing:
            data, task, _ = self._continued_data(X, y, sample_weight, "partial_fit")
        else:
            data, task, _ = self._new_data(X, y, sample_weight, classes)
        n_calls = self.n_iter_ if continuing else 0
        # A new shuffling order each call, reproducible from random_state.
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        seed = (seed + n_calls) % np.iinfo(np.int32).max
        fit = Fit(self._fit_settings(), task, seed, resolve_device(self.device), data)
        fit.epoch(self._previous() if continuing else None)
        self._set_fitted_state(fit.net, task, fit.pairs, data)
        if not continuing:
            self.depth_ = fit.depth
            self.start_regularization_ = fit.penalty
        self.learning_gain_ = None  # no validation part to measure it on
        self._optimizer_state = fit.optimizer_state()
        self._optimizer_params = (self.lr, self.weight_decay)
        self._finish_fit()

    def _fit_settings(self):
        """The parameters a :class:`~sknd._estimators._fit.Fit` trains with, as values
        (``variant`` and ``bands`` as frozen at fit)."""
        _, train_noise = self._class_label_params()
        return Settings(
            name=type(self).__name__,
            architecture=self.architecture,
            depth=self.depth,
            hidden_units=self.hidden_units,
            epsilon=self.epsilon,
            variant=self.variant_,
            pairs=self.pairs,
            bands=self.bands_,
            lr=self.lr,
            weight_decay=self.weight_decay,
            batch_size=self.batch_size,
            max_epochs=self.max_epochs,
            early_stopping=self.early_stopping,
            patience=self.patience,
            verbose=self.verbose,
            passthrough=self.passthrough,
            recipe=self.recipe,
            callbacks=self.callbacks,
            train_noise=train_noise,
        )

    def _previous(self):
        """The fitted model a warm start or ``partial_fit`` continues, a
        :class:`~sknd._estimators._fit.Previous`: training continues a copy of the network,
        so that a failed or interrupted call leaves the fitted model intact."""
        return Previous(
            pairs=self.pairs_,
            module=copy.deepcopy(self._module).cpu(),
            penalty=self.start_regularization_,
            history=self.net_.history,
            optimizer_state=getattr(self, "_optimizer_state", None),
            optimizer_params=getattr(self, "_optimizer_params", None),
        )

    def _check_batch_size(self):
        """Refuse a boolean ``batch_size``, an Integral to scikit-learn's checks."""
        if isinstance(self.batch_size, (bool, np.bool_)):
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}.")

    def _new_data(self, X, y, sample_weight, classes=None, groups=None):
        """Validate the data of a new fit; return ``(data, task, groups)``.

        ``data`` is the :class:`~sknd._data._parts.Part` of the data with the target encoded,
        exact duplicate rows merged into weighted ones
        (:func:`~sknd._data._weights.merge_duplicates`). Freezes what the network is made of
        (``epsilon_``, ``variant_``, ``bands_``, the network parameters) and makes a task from
        ``y`` (and ``classes``).
        """
        self._check_batch_size()
        # Frozen at fit: set_params without a refit must not change what the network
        # computes or which inputs it accepts (X_val is checked against these too).
        self.epsilon_, self.variant_ = float(self.epsilon), self.variant
        self._network_params_ = {name: getattr(self, name) for name in NETWORK_PARAMS}
        self._band_names_given = self.bands is not None
        X, y = self._validate_X_y(X, y, reset=True)
        self._record_band_range(X, continuing=False)
        # Band names (DataFrame columns or bands=) are frozen at fit time; they
        # label indices_, export_formulas and get_feature_names_out.
        self.bands_ = resolve_bands(
            self.bands,
            n_features=X.shape[1],
            feature_names=getattr(self, "feature_names_in_", None),
            sensor=self.sensor,
        )
        self.band_names_ = np.asarray([band.name for band in self.bands_], dtype=object)
        weight = fit_weights(sample_weight, X, y, self._class_label_params()[0])
        X, y, weight, groups = merge_duplicates(X, y, weight, groups)
        task = self._make_task(y, weight, classes)
        return Part(X, task.encoded, weight), task, groups

    def _continued_data(self, X, y, sample_weight, how, groups=None):
        """Validate the data of a call that continues the fitted network (``how``: the
        call, a warm start or ``partial_fit``) against what it was fitted on; return
        ``(data, task, groups)`` as :meth:`_new_data`, the fitted task kept."""
        self._check_batch_size()
        check_network_params(self._network_params_, self.get_params(deep=False), how)
        X, y = self._validate_X_y(X, y, reset=False)
        self._record_band_range(X, continuing=True)
        weight = fit_weights(sample_weight, X, y, self._class_label_params()[0])
        X, y, weight, groups = merge_duplicates(X, y, weight, groups)
        task = self._task.continued(y)
        codes = task.encode(y)
        if np.ndim(codes) == 2 and codes.shape[1] != task.n_outputs:
            raise ValueError(
                f"y has {codes.shape[1]} target column(s), but the fitted "
                f"{type(self).__name__} predicts {task.n_outputs}: pass y with the "
                "columns of the first fit."
            )
        return Part(X, codes, weight), task, groups

    def _validation_split(self, rows, task, X_val, y_val, seed, groups=None):
        """Return the ``(train, valid)`` :class:`~sknd._data._parts.Part` of ``rows``.

        ``valid`` is None without a validation part; an explicit ``X_val`` is not
        weighted. Otherwise ``validation_fraction`` of the rows is held out
        (:func:`~sknd._estimators._fit_data.split_validation`: whole ``groups`` where given).
        """
        if (X_val is None) != (y_val is None):
            raise ValueError("Pass both X_val and y_val, or neither.")
        if X_val is not None:
            try:
                X_val, y_val = self._validate_X_y(X_val, y_val, reset=False, name="X_val")
            except ValueError as exc:
                if "X_val" in str(exc) or "y_val" in str(exc):
                    raise
                # scikit-learn calls any target "y": here it is y_val.
                message = str(exc).replace("Input y ", "Input y_val ")
                raise ValueError(f"Invalid validation data X_val, y_val: {message}") from exc
            codes_val = task.encode(y_val, "y_val")
            return rows, Part(X_val, matching_outputs(codes_val, rows.target))
        if not self.early_stopping:
            return rows, None
        return split_validation(rows, task, self.validation_fraction, seed, groups)

    def _set_fitted_state(self, net, task, pairs, train):
        """Keep the trained ``net`` (as ``net_``) and its ``task``, and set the fitted
        attributes read from it (:func:`~sknd._estimators._fitted_state.fitted_attributes`;
        ``train``: the training :class:`~sknd._data._parts.Part`)."""
        self.net_ = net
        self._module = net.module_.eval()
        self._task = task
        self.n_outputs_ = task.n_outputs
        fitted = fitted_attributes(net, pairs, train, self.passthrough, self._inference_device())
        for name, value in fitted.items():
            setattr(self, name, value)

    def _finish_fit(self):
        """Attributes derived from the trained network (subclasses add theirs)."""
        self._set_indices()

    @property
    def module_(self):
        """The fitted network, a ``torch.nn.Module`` in eval mode (see ``to_torch``).

        The live network that ``predict`` runs: changing its weights changes the
        predictions but not the attributes read from it at fit (``coef_a_``,
        ``indices_`` ...). ``to_torch()`` returns a copy to change.
        """
        check_is_fitted(self)
        return self._module

    def to_torch(self):
        """A standalone copy of the fitted network, as a ``torch.nn.Module`` on the CPU.

        For fine-tuning or embedding the network in a larger torch model: a deep
        copy (changing it leaves the estimator as it is) with the ND layer
        (:class:`sknd.nn.NormalizedDifference`: pairs and weights), the default
        recipe's standardization as a fixed layer, and the dense layers. It maps
        float32 band rows ``(N, n_features_in_)`` to the raw outputs the
        estimator trained: logits for ``NDClassifier`` (one, of ``classes_[1]``,
        for two classes; one per class otherwise, for softmax), and for
        ``NDRegressor`` the targets standardized by their training mean and
        standard deviation; ``NDTransformer``'s network predicts its ``y`` in
        the same way. For the ND layer alone, see
        :meth:`sknd.nn.NormalizedDifference.from_estimator`.

        Returns
        -------
        module : torch.nn.Module
            In training mode, its parameters requiring gradients.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> import torch
        >>> from sknd import NDClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(200, 4))
        >>> y = (X[:, 3] > X[:, 2]).astype(int)
        >>> clf = NDClassifier(max_epochs=5, random_state=0).fit(X, y)
        >>> network = clf.to_torch()
        >>> logits = network(torch.as_tensor(X, dtype=torch.float32))
        >>> bool(np.array_equal(logits.detach().numpy()[:, 0] > 0, clf.predict(X) == 1))
        True
        """
        check_is_fitted(self)
        module = copy.deepcopy(self._module).cpu().train()
        layer = first_nd_layer(module)
        if layer is not None:  # names for sknd.inspection and sknd.plotting
            layer.bands = tuple(str(name) for name in self.band_names_)
            layer.sensor = self._network_params_["sensor"]
        return module

    def _nd_layer(self):
        """The trained ND layer, or None for the MLP baseline."""
        return first_nd_layer(self._module)

    # ------------------------------------------------------------------ inference
    def _inference_device(self):
        return inference_device(self.device)

    def _run_module(self, X, module=None):
        """Forward ``X`` (a validated array) through ``module`` (default: the whole net).

        In float64 (see :func:`sknd.networks.forward_rows`), on the inference device.
        """
        module = self._module if module is None else module
        self._module.to(self._inference_device())
        return forward_rows(module, X, rows_per_pass(self._module))

    def _fast_evaluator(self, method):
        """A fast evaluator of ``method`` on pixel tables, or None (internal hook).

        :mod:`sknd.raster` asks fitted estimators for it and falls back to the
        public method when there is none (methods without one, networks the
        evaluators do not know). Returns a :class:`sknd._inference._evaluator.FastNetwork`,
        whose values equal the method's (tests/nd/test_networks.py,
        tests/inference/test_evaluator.py), or for a model set to use a GPU a
        :class:`sknd._inference._device_pixels.DevicePixels`, which screens, checks and
        evaluates pixels there.
        """
        if method == "transform":
            return self._indices_evaluator(slice(None))
        finish = {"predict": "decode", "predict_proba": "proba"}.get(method)
        if not hasattr(self._task, finish or "-"):
            return None
        if self._inference_device().type != "cpu" and describe(self._module) is not None:
            from .._inference._device_pixels import DevicePixels

            return DevicePixels.for_task(
                self._module, self._task, method, self._inference_device(), **self._pixel_checks()
            )
        return self._network_evaluator(getattr(self._task, finish))

    def _indices_evaluator(self, selected):
        """The learned indices ``selected`` (rows of ``pairs_``) as a
        :class:`sknd._inference._evaluator.FastNetwork`, in the input's dtype, on the CPU."""
        from .._inference._evaluator import FastNetwork

        return FastNetwork.for_indices(
            self.pairs_[selected],
            self.coef_a_[selected],
            self.coef_c_[selected],
            self.n_features_in_,
            self.epsilon_,
            self.variant_,
            **self._pixel_checks(),
        )

    def _network_evaluator(self, finish=None):
        """The network as a :class:`~sknd._inference._evaluator.FastNetwork`, or None.

        None on a GPU (the torch network runs there) and for a network the
        evaluator does not know.
        """
        if self._inference_device().type != "cpu":
            return None
        records = describe(self._module)
        if records is None:
            return None
        from .._inference._evaluator import FastNetwork

        return FastNetwork.for_network(records, self.n_features_in_, finish, **self._pixel_checks())

    def _model_content(self):
        """What a model file keeps to predict (internal hook of :mod:`sknd._model_file`).

        The network as plain data (:func:`sknd._inference._evaluator.network_layers`) and
        what decodes its outputs: ``classes`` of a classifier, the ``target``
        statistics of a regressor.
        """
        from .._data._tasks import ClassificationTask
        from .._inference._evaluator import network_layers

        content = {"network": network_layers(describe(self._module))}
        task = self._task
        if isinstance(task, ClassificationTask):
            content["classes"] = task.classes
        else:
            content["target"] = {"mean": task.mean, "scale": task.decode_scale, "ndim": task.ndim}
        return content

    def _export_network(self):
        """``(network, task)`` for :mod:`sknd.onnx` (internal hook): a CPU copy in eval mode.

        ``network`` maps float32 band rows to the raw outputs that ``task``
        decodes (``task.proba``, ``task.decode``).
        """
        return copy.deepcopy(self._module).cpu().eval(), self._task

    def _pixel_checks(self):
        """What :mod:`sknd._inference._evaluator` checks pixels with, as ``fit`` saw them."""
        return dict(
            non_negative=self._fitted_param("variant") == "reflectance",
            estimator_name=type(self).__name__,
            feature_names=getattr(self, "feature_names_in_", None),
            band_range=self._band_range_to_check(),
        )

    def _set_indices(self):
        """Build ``indices_``; called last in ``fit``, once the outputs are known."""
        self.indices_ = index_table(self)
        note = self.indices_.attrs.get("note")
        if self.verbose and note:
            print(f"indices_: {note}")

    @one_thread()
    def _network_output(self, X):
        """Validate ``X`` and return the raw network outputs (always finite).

        On the CPU by the evaluator :mod:`sknd.raster` uses (numpy and numba, in
        float32 for float32 tables and float64 otherwise): the methods give, bit
        for bit, the values of a scene's pixels and of a model file. On a GPU by
        the torch network in float64.
        """
        check_is_fitted(self)
        X = self._validate_X(X)
        evaluator = self._network_evaluator()
        output = self._run_module(X) if evaluator is None else evaluator(X, checked=True)
        finite = np.isfinite(output)
        if not finite.all():
            # Validated inputs and finite weights cannot get here; never hand out NaN.
            raise ValueError(
                f"{type(self).__name__} computed non-finite outputs for "
                f"{locate(~finite)} of the network output: these inputs are outside what the "
                "model can evaluate in float32. Check them for extreme values, and please "
                "report the case to the sknd developers."
            )
        return output

    # ------------------------------------------------------------------ persistence
    def __getstate__(self):
        # A copy: object.__getstate__ returns the instance's own __dict__, which the
        # changes below must not touch (the live model stays on its GPU).
        state = dict(super().__getstate__())
        module = state.get("_module")
        if module is not None and any(p.device.type != "cpu" for p in module.parameters()):
            # Pickles must load on CPU-only machines; inference moves the net back to the GPU.
            state = _on_cpu(state)
        state["_sknd_version"] = __version__
        return state

    def __setstate__(self, state):
        version = state.pop("_sknd_version", None)
        if version is not None and version != __version__:
            warnings.warn(
                f"Trying to unpickle {type(self).__name__} from sknd version {version} "
                f"when using version {__version__}. This might lead to breaking code or "
                "invalid results. Use at your own risk.",
                UserWarning,
                stacklevel=2,
            )
        super().__setstate__(state)
