"""How the sknd estimators train: fit, warm start and ``partial_fit`` over skorch.

:class:`FittingMixin` holds the training half of :class:`~sknd._base.BaseND`: the
validation split, pair screening, building the network, sknd's recipe
(:mod:`sknd._recipe`), the skorch loop (:mod:`sknd._training`) and the fitted
attributes read from the trained network. :func:`restore_on_failure` makes every
fitting method all or nothing.
"""

import copy
import functools
import threading
from numbers import Number, Real

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import GroupShuffleSplit, train_test_split
from sklearn.utils import check_random_state
from skorch.helper import predefined_split

from . import _recipe
from ._adam import FlatAdam
from ._device import device_memory
from ._pairs import estimator_pairs
from ._tasks import ClassificationTask
from ._threads import torch_threads
from ._training import (
    EarlyStopping,
    FiniteTraining,
    Net,
    TensorBatches,
    TensorDataset,
    ValidationScore,
)
from ._user_callbacks import user_callbacks
from ._validation import check_training_memory
from ._weights import fit_weights, merge_duplicates, weight_tensor
from .bands import resolve_bands
from .networks import build_network, default_hidden_units, describe, rows_per_pass

__all__ = [
    "FittingMixin",
    "inference_device",
    "resolve_device",
    "restore_on_failure",
    "validation_data_by_keyword",
]

#: The depth ``depth="auto"`` builds where it cannot choose on validation (no validation
#: part, ``recipe="paper"``, the MLP, ``partial_fit``): the paper's depth-2 model.
AUTO_PLAIN_DEPTH = 2


def _depth_of(module, architecture):
    """The depth of a network built by :func:`~sknd.networks.build_network`: its
    first layer, hidden layers and output layer (ReLUs and Standardize not counted)."""
    linears = sum(layer.kind == "linear" for layer in describe(module))
    return linears + (architecture != "mlp")


# Fits of one process draw initial weights from torch's global generator under this lock
# (see FittingMixin._new_network). The thread policy (one torch thread) lives in sknd._threads.
_init_lock = threading.Lock()


def _available(device):
    """Whether PyTorch can use ``device`` (a ``torch.device``) on this machine."""
    if device.type == "cuda":
        return torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()
    if device.type == "mps":
        return torch.backends.mps.is_available()
    return device.type == "cpu" or device.type == "meta"


def resolve_device(device):
    """The device a fit trains on, as a string: ``"auto"`` chosen, any other checked.

    ``device`` is anything ``torch.device`` accepts (``"cpu"``, ``"cuda:1"``,
    ``"mps"``, a ``torch.device``) or ``"auto"``; a ``ValueError`` says what is
    wrong with one PyTorch does not know or cannot use here.
    """
    if isinstance(device, str) and device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(
            f"device={device!r} is not a device PyTorch knows ({exc}). Use 'cpu', 'cuda', "
            "'cuda:0', 'mps', a torch.device, or 'auto' (a CUDA GPU when there is one)."
        ) from None
    if not _available(resolved):
        missing = {
            "cuda": f"no CUDA GPU {resolved.index or 0} is available to PyTorch (it sees "
            f"{torch.cuda.device_count()})",
            "mps": "PyTorch's Apple MPS backend is not available",
        }.get(resolved.type, f"PyTorch cannot use {resolved.type} devices here")
        raise ValueError(
            f"device={device!r} was requested but {missing}; use device='cpu' or device='auto'."
        )
    return str(resolved)


def inference_device(device):
    """The ``torch.device`` a fitted model predicts on: the CPU where ``device`` is not
    available here (a model fitted on a GPU, unpickled elsewhere)."""
    try:
        return torch.device(resolve_device(device))
    except ValueError:
        return torch.device("cpu")


def _group_split(X, codes, groups, validation_fraction, seed, weight):
    """Hold out about ``validation_fraction`` of the groups for early stopping."""
    groups = np.asarray(groups)
    if groups.ndim != 1 or len(groups) != len(X):
        raise ValueError(
            f"groups must be one label per sample: got shape {groups.shape} for {len(X)} samples."
        )
    if len(np.unique(groups)) < 2:
        raise ValueError(
            "early_stopping=True with groups holds out whole groups for validation, but all "
            "samples are in one group. Pass at least two groups, an explicit X_val and "
            "y_val, or early_stopping=False."
        )
    splitter = GroupShuffleSplit(n_splits=1, test_size=validation_fraction, random_state=seed)
    train, valid = next(splitter.split(X, codes, groups))
    if weight is None:
        return X[train], codes[train], X[valid], codes[valid], None, None
    return X[train], codes[train], X[valid], codes[valid], weight[train], weight[valid]


def _same_param(before, now):
    """Whether a parameter value is unchanged (array-likes compared by value)."""
    if before is now:
        return True
    # Equal values of another type (np.float64(1e-6), np.int64(5), np.True_: param grids,
    # numpy round trips) are the same value; a bool is no number here (True is not 1).
    flags = (bool, np.bool_)
    if isinstance(before, flags) or isinstance(now, flags):
        return isinstance(before, flags) and isinstance(now, flags) and bool(before) == bool(now)
    if isinstance(before, Number) and isinstance(now, Number):
        return bool(before == now)
    if isinstance(before, str) or isinstance(now, str) or np.ndim(before) == np.ndim(now) == 0:
        return type(before) is type(now) and before == now
    try:
        return np.array_equal(np.asarray(before, dtype=object), np.asarray(now, dtype=object))
    except ValueError:  # ragged
        return False


#: What skorch and sknd's loop record every epoch besides history_'s own columns.
_SKORCH_RECORDS = (
    "batches",
    "dur",
    "train_loss_best",
    "valid_loss_best",
    "train_batch_count",
    "valid_batch_count",
)


def _cpu_copy(state):
    """``state`` (an optimizer's ``state_dict``) with every tensor copied to the CPU."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu().clone()
    if isinstance(state, dict):
        return {key: _cpu_copy(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_cpu_copy(value) for value in state)
    return state


def _matching_outputs(codes_val, codes):
    """``codes_val`` shaped as ``codes``, or a ValueError if their outputs differ."""
    outputs, outputs_val = (1 if np.ndim(c) == 1 else np.shape(c)[1] for c in (codes, codes_val))
    if outputs != outputs_val:
        raise ValueError(
            f"y_val has {outputs_val} output(s) per sample but y has {outputs}: early stopping "
            "would track the wrong target. Pass y_val with the columns of y."
        )
    return np.reshape(codes_val, (len(codes_val),) + np.shape(codes)[1:])


def _tensors(X, codes, weight, task, device):
    """A :class:`~sknd._training.TensorDataset` of float32 bands, targets and weights."""
    return TensorDataset(
        torch.tensor(X, dtype=torch.float32, device=device),
        task.target_tensor(codes).to(device),
        weight_tensor(weight, device),
    )


def _report_recipe(task, penalty, tuned, start, selected):
    """``verbose``, before the epoch table: what the default recipe chose."""
    name = "C" if isinstance(task, ClassificationTask) else "alpha"
    how = "chosen on the data" if tuned else "fixed: too few rows to choose it on"
    print(f"recipe: convex start on the classic indices, {name}={penalty:.3g} ({how})")
    if start is None:
        print("recipe: no validation part: the indices were not refined; learning_gain_=None")
        return
    print(
        f"recipe: validation score {start.score:.4f} at the start, {selected.score:.4f} "
        "with refined indices; training follows"
    )


def _report_gain(gain, clock):
    """``verbose``, after the epoch table: what learning the indices gained, and the wall
    time of each stage (a :class:`~sknd._recipe.Stopwatch`)."""
    if gain is not None:
        print(f"recipe: learning_gain_={gain:+.4f} after training")
    print(f"recipe: stage times: {clock}")


def _start_score(module, task, valid, rows):
    """Early stopping's epoch 0: the monitored validation value of ``module``."""
    return _recipe.validation(module, task, valid, rows).monitored(task)


# ids of the estimator objects being fitted now (see restore_on_failure).
_objects_in_fit = set()
_fitting_lock = threading.Lock()


def restore_on_failure(fit):
    """Make a fitting method all or nothing: if it raises, the estimator is left as it was.

    scikit-learn sets fitted attributes at the end of ``fit``, but
    ``validate_data`` already sets ``n_features_in_`` at the start: an
    interrupted first fit (KeyboardInterrupt, divergence, invalid data) would
    leave an estimator that ``check_is_fitted`` accepts, and an interrupted
    refit one whose ``n_features_in_`` disagrees with its network. Restoring the
    attributes leaves an unfitted estimator unfitted and keeps the previous
    model of a fitted one, intact and consistent. (A warm start or ``partial_fit``
    trains a copy of the fitted network, so that its weights are restored too.)

    It also refuses a second ``fit`` of the same object while one runs (in
    another thread): both would write the same attributes and leave a mix of
    two models. Fits of separate objects (``clone``) run in parallel. Applied
    outside ``_fit_context``, so that an interrupt landing in its exit still
    restores the previous model.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with _fitting_lock:
            if id(self) in _objects_in_fit:
                raise RuntimeError(
                    f"This {type(self).__name__} object is already being fitted in another "
                    "thread; one object cannot fit twice at once. Fit a copy in each thread "
                    "(sklearn.base.clone(estimator))."
                )
            _objects_in_fit.add(id(self))
        before = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
        finally:
            with _fitting_lock:
                _objects_in_fit.discard(id(self))

    return wrapper


def validation_data_by_keyword(fit):
    """Refuse ``fit(X, y, X_val, y_val)``: ``fit``'s third argument is ``sample_weight``.

    As in scikit-learn (``HistGradientBoostingClassifier.fit(X, y, sample_weight=None, *,
    X_val=None, y_val=None)``); sknd's ``fit`` took ``X_val`` third before 0.1.0. A call
    in that form would train with the validation bands as sample weights: a ``TypeError``
    says how to call it instead.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        # X, y, sample_weight: a 2-D "sample_weight" is a table of bands.
        if len(args) > 3 or (len(args) == 3 and np.ndim(args[2]) == 2):
            raise TypeError(
                f"{type(self).__name__}.fit takes validation data by keyword only, as "
                "scikit-learn's estimators do: fit(X, y, sample_weight=None, *, X_val=None, "
                "y_val=None, groups=None). Its third positional argument is sample_weight; "
                "call fit(X, y, X_val=X_val, y_val=y_val)."
            )
        return fit(self, *args, **kwargs)

    return wrapper


class FittingMixin:
    """Training for :class:`~sknd._base.BaseND` (its parameters and validation live there).

    ``_fit`` trains a new network, or continues the fitted one under
    ``warm_start``; ``_partial_fit`` runs one epoch per call. Subclasses provide
    ``_make_task``, ``_validate_X_y`` and ``_finish_fit``'s additions.
    """

    def _validation_split(self, X, codes, task, X_val, y_val, seed, groups=None, weight=None):
        """Return ``(X_train, codes_train, X_val, codes_val, weight_train, weight_val)``.

        The validation parts may be None, and the weights are None when ``weight`` is
        (an explicit ``X_val`` is not weighted).

        With ``groups``, the internal split holds out whole groups (fields, spatial
        blocks): correlated samples on both sides would make early stopping optimistic.
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
            return X, codes, X_val, _matching_outputs(codes_val, codes), weight, None
        if not self.early_stopping:
            return X, codes, None, None, weight, None
        if groups is not None:
            return _group_split(X, codes, groups, self.validation_fraction, seed, weight)
        n_samples = len(X)
        n_valid = int(np.ceil(self.validation_fraction * n_samples))
        if n_samples - n_valid < 1:
            raise ValueError(
                f"early_stopping=True holds out validation_fraction={self.validation_fraction} "
                f"of the data, which leaves no training sample with n_samples={n_samples}. "
                "Pass more samples, an explicit X_val and y_val, or early_stopping=False."
            )
        stratify = None
        if task.stratified:
            # Stratify whenever every class can appear on both sides; tiny data falls back
            # to a plain random split rather than failing.
            counts = np.bincount(codes)
            if counts.min() >= 2 and min(n_valid, n_samples - n_valid) >= len(counts):
                stratify = codes
        weights = [] if weight is None else [weight]
        X_train, X_valid, c_train, c_valid, *weights = train_test_split(
            X, codes, *weights, test_size=n_valid, random_state=seed, stratify=stratify
        )
        return X_train, c_train, X_valid, c_valid, *(weights or [None, None])

    # ------------------------------------------------------------------ fitting
    #: Parameters the fitted network is made of. A warm start or ``partial_fit`` continues
    #: that network, so they must not change between calls (the others may: lr, epochs ...).
    _NETWORK_PARAMS = (
        "architecture",
        "depth",
        "hidden_units",
        "epsilon",
        "variant",
        "pairs",
        "bands",
        "sensor",
        "passthrough",
        "recipe",
    )

    def _check_network_params(self, how):
        """Refuse to continue training when a parameter of the network changed since fit."""
        for name in self._NETWORK_PARAMS:
            before, now = self._network_params_[name], getattr(self, name)
            if not _same_param(before, now):
                raise ValueError(
                    f"{how} continues the fitted network, but {name} changed from {before!r} "
                    f"to {now!r} since it was fitted. Set {name} back, or train a new network "
                    "with fit (and warm_start=False)."
                )

    def _start_fit(self, X, y, sample_weight, *, continuing, how, classes=None, groups=None):
        """Validate the data of a fit, warm start or ``partial_fit`` call.

        Returns ``(X, codes, weight, task, groups)``, exact duplicate rows merged
        into weighted ones (:func:`~sknd._weights.merge_duplicates`). A new fit
        freezes what the network is made of (``epsilon_``, ``variant_``, ``bands_``,
        the network parameters) and makes a task from ``y`` (and ``classes``); a
        continuing call checks ``X`` and ``y`` against them and keeps the fitted task.
        """
        if isinstance(self.batch_size, (bool, np.bool_)):  # an Integral to scikit-learn
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}.")
        if continuing:
            self._check_network_params(how)
            X, y = self._validate_X_y(X, y, reset=False)
            self._record_band_range(X, continuing=True)
            weight = fit_weights(sample_weight, X, y, getattr(self, "class_weight", None))
            X, y, weight, groups = merge_duplicates(X, y, weight, groups)
            task = self._task.continued(y)
            codes = task.encode(y)
            if np.ndim(codes) == 2 and codes.shape[1] != task.n_outputs:
                raise ValueError(
                    f"y has {codes.shape[1]} target column(s), but the fitted "
                    f"{type(self).__name__} predicts {task.n_outputs}: pass y with the "
                    "columns of the first fit."
                )
            return X, codes, weight, task, groups
        # Frozen at fit: set_params without a refit must not change what the network
        # computes or which inputs it accepts (X_val is checked against these too).
        self.epsilon_, self.variant_ = float(self.epsilon), self.variant
        self._network_params_ = {name: getattr(self, name) for name in self._NETWORK_PARAMS}
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
        weight = fit_weights(sample_weight, X, y, getattr(self, "class_weight", None))
        X, y, weight, groups = merge_duplicates(X, y, weight, groups)
        task = self._make_task(y, weight, classes)
        return X, task.encoded, weight, task, groups

    def _uses_recipe(self):
        # sknd's default recipe (sknd._recipe): networks with an ND layer; deeper ones start
        # at the depth-2 model (_recipe.carry). The MLP trains as in the paper.
        return self.recipe == "sknd" and self.architecture != "mlp"

    def _hidden_units(self, n_features, pairs, n_outputs, passthrough, depth):
        """The hidden width: ``hidden_units``, or its default for the recipe and ``depth``."""
        recipe, deep = self._uses_recipe(), depth > 2
        if self.hidden_units is not None:
            if recipe and deep and self.hidden_units < 2 * n_outputs:
                raise ValueError(
                    f"hidden_units={self.hidden_units} is too narrow for recipe='sknd' at "
                    f"depth={depth}: the hidden layers carry its linear start in 2 x "
                    f"n_outputs = {2 * n_outputs} units. Use hidden_units >= "
                    f"{2 * n_outputs}, hidden_units=None or recipe='paper'."
                )
            return self.hidden_units
        if not (recipe and deep):
            return default_hidden_units(len(pairs))
        with torch.device("meta"):  # shapes only: no memory, no random draws
            depth2 = build_network(
                self.architecture,
                n_features,
                n_outputs,
                pairs=pairs,
                variant=self.variant_,
                passthrough=passthrough,
                standardize=True,
            )
        return _recipe.hidden_units(depth2, n_features)

    def _new_network(self, X_train, c_train, w_train, task, seed, device, depth):
        """Screen the pairs and build the network of ``depth`` (on the CPU); return
        ``(pairs, module)``."""
        n_features = X_train.shape[1]
        pairs = estimator_pairs(
            self.pairs,
            self.bands_,
            X_train,
            c_train,
            n_outputs=task.n_outputs,
            mlp_width=default_hidden_units(n_features * (n_features - 1) // 2),
            classification=isinstance(task, ClassificationTask),
            variant=self.variant_,
            epsilon=self.epsilon,
            sample_weight=w_train,
        )
        passthrough = self._passthrough_scaling(X_train, w_train)
        hidden_units = self._hidden_units(n_features, pairs, task.n_outputs, passthrough, depth)
        recipe_rows = 0
        if self._uses_recipe():  # the convex fits' tables of rows x first-block outputs
            outputs = len(pairs) + (n_features if self.passthrough else 0)
            coefficients = (outputs + 1) * task.n_outputs
            recipe_rows = min(len(X_train), _recipe.convex_budget(coefficients))
        check_training_memory(
            architecture=self.architecture,
            n_features=n_features,
            n_pairs=len(pairs),
            n_outputs=task.n_outputs,
            depth=depth,
            hidden_units=hidden_units,
            batch_size=self.batch_size,
            n_samples=len(X_train),
            passthrough=self.passthrough,
            estimator_name=type(self).__name__,
            recipe_rows=recipe_rows,
        )
        # Weights are drawn from torch's global generator: seed it inside fork_rng (the
        # caller's state comes back afterwards) and under a lock, so fits running in threads
        # of one process neither see each other's seeds nor restore each other's states.
        # Training itself draws only from its own shuffling generator.
        cuda_devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
        with _init_lock, torch.random.fork_rng(devices=cuda_devices):
            torch.manual_seed(seed)
            module = build_network(
                self.architecture,
                n_features,
                task.n_outputs,
                depth=depth,
                hidden_units=hidden_units,
                pairs=pairs,
                epsilon=self.epsilon,
                variant=self.variant_,
                passthrough=passthrough,
                standardize=self._uses_recipe(),
            )
        return pairs, module

    def _network(self, continuing, X_train, c_train, w_train, task, seed, device, depth=None):
        """``(pairs, module)`` to train: a copy of the fitted network, or a new one of
        ``depth`` (None: :meth:`_plain_depth`).

        Continuing trains a copy, so that a failed or interrupted warm start or
        ``partial_fit`` leaves the fitted model intact.
        """
        if continuing:
            return self.pairs_, copy.deepcopy(self._module).cpu()
        depth = self._plain_depth() if depth is None else depth
        return self._new_network(X_train, c_train, w_train, task, seed, device, depth)

    def _plain_depth(self):
        """The depth built when none is chosen on validation: ``depth``, or 2 for "auto"."""
        return AUTO_PLAIN_DEPTH if self.depth == "auto" else self.depth

    def _auto_depth(self, continuing, X_valid):
        """``(chooses, why_not)``: whether ``depth="auto"`` chooses between depths 2 and 3
        on the validation part, and why it cannot (None when it can, or was not asked)."""
        if self.depth != "auto" or continuing:
            return False, None
        if not self._uses_recipe():
            why = f"the {self.architecture!r} network under recipe={self.recipe!r} has no tuned "
            return False, why + "depth-2 model for a deeper one to start at"
        if X_valid is None or not self.early_stopping:
            return False, "no validation part to choose on (early_stopping=False, no X_val)"
        if self.callbacks:
            return False, "callbacks follow one training run (pass depth=3 for the deeper one)"
        if len(X_valid) < _recipe.MIN_SELECTION_ROWS:
            return False, f"fewer than {_recipe.MIN_SELECTION_ROWS} validation rows"
        return True, None

    def _net(
        self, module, task, device, seed, max_epochs, callbacks, valid_data=None, how="this fit"
    ):
        """The skorch net that trains ``module`` (an initialised instance) on ``device``.

        ``callbacks`` are sknd's; the user's (copies of ``self.callbacks``) run after
        them but before sknd's early stopping, which so scores and keeps the weights
        training starts from once a callback such as ``LoadInitState`` has set them,
        and restores its best epoch last.
        """
        rows = rows_per_pass(module)
        stopping = [item for item in callbacks if item[0] == "early_stopping"]
        own = [item for item in callbacks if item[0] != "early_stopping"]
        users = user_callbacks(
            self.callbacks,
            early_stopping=bool(stopping),
            validation=valid_data is not None,
            how=how,
            task=task,
        )
        net = Net(
            module=module,
            criterion=task.criterion,
            optimizer=FlatAdam,
            lr=self.lr,
            optimizer__weight_decay=self.weight_decay,
            max_epochs=max_epochs,
            batch_size=self.batch_size,
            train_split=None if valid_data is None else predefined_split(valid_data),
            iterator_train=TensorBatches,
            iterator_train__shuffle=True,
            iterator_train__generator=torch.Generator().manual_seed(seed),
            iterator_valid=TensorBatches,
            iterator_valid__batch_size=rows,
            # First, so that a non-finite epoch stops fit before any other callback uses it.
            callbacks=[("finite_training", FiniteTraining()), *own, *users, *stopping],
            device=device,
            verbose=self.verbose,
        )
        net.task_ = task  # net_.predict and predict_proba decode as the estimator does
        return net

    def _device_memory(self, n_samples):
        """Out of memory on the GPU during training: a ``MemoryError`` naming ``batch_size``."""
        return device_memory(
            f"while training on {n_samples} samples", f"batch_size (now {self.batch_size})"
        )

    def _fit(self, X, y, X_val=None, y_val=None, groups=None, sample_weight=None):
        """``fit``: train a new network, or continue the fitted one with ``warm_start``."""
        continuing = self.warm_start and hasattr(self, "_module")
        X, codes, weight, task, groups = self._start_fit(
            X, y, sample_weight, continuing=continuing, how="warm_start=True", groups=groups
        )
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        device = resolve_device(self.device)
        X_train, c_train, X_valid, c_valid, w_train, w_valid = self._validation_split(
            X, codes, task, X_val, y_val, seed, groups, weight
        )
        recipe = self._uses_recipe()
        auto, why_not = self._auto_depth(continuing, X_valid)
        pairs, module = self._network(
            continuing, X_train, c_train, w_train, task, seed, device, 3 if auto else None
        )
        rows = rows_per_pass(module)
        valid = None
        if recipe and X_valid is not None:
            valid = (X_valid, self._convex_target(task, c_valid), w_valid)
        clock = _recipe.Stopwatch()
        with torch_threads(1):
            start = selected = penalty = tuned = None
            linear = module
            if recipe:
                start, selected, penalty, tuned, linear = self._recipe_start(
                    module, continuing, X_train, c_train, w_train, task, valid, clock, auto
                )
            if self.verbose and recipe and not continuing:
                _report_recipe(task, penalty, tuned, start, selected)
            train = functools.partial(
                self._train, task, device, seed, (X_train, c_train, w_train), valid, clock
            )
            net = train(linear, selected, (X_valid, c_valid, w_valid))
            if auto:
                net = self._deeper(net, module, train, task, valid, (X_valid, c_valid, w_valid))
            gain = None
            if start is not None:
                gain = _recipe.validation(net.module_, task, valid, rows).score - start.score
            if recipe:
                with clock.stage("refit"):
                    self._recipe_refit(
                        net.module_,
                        task,
                        rows,
                        penalty,
                        (X_train, c_train, w_train),
                        (X_valid, c_valid, w_valid),
                    )

        self._set_fitted_state(net, task, pairs, X_train, w_train)
        if not continuing:
            self.depth_ = _depth_of(net.module_, self.architecture)
        self.learning_gain_ = gain
        self.start_regularization_ = penalty
        if self.verbose and recipe and not continuing:
            _report_gain(gain, clock)
        if self.verbose and why_not is not None:
            print(f"depth='auto': depth {self.depth_}, the plain rule: {why_not}")
        # partial_fit after fit starts a new optimizer (as after a warm start).
        self._optimizer_state = None
        self._finish_fit()

    def _train(self, task, device, seed, train, valid, clock, module, selected, valid_part):
        """Train ``module`` with Adam and early stopping; return the skorch net.

        ``train`` and ``valid_part`` are ``(X, codes, weight)``; ``valid`` is the recipe's
        validation triple (None outside the recipe) and ``selected`` the
        :class:`~sknd._recipe.Validation` of ``module`` when it is the recipe's start.
        """
        X_valid, c_valid, w_valid = valid_part
        rows = rows_per_pass(module)
        callbacks = self._fit_callbacks(task, X_valid, valid, selected, rows)
        valid_data = None
        if X_valid is not None:
            valid_data = _tensors(X_valid, c_valid, w_valid, task, device)
        net = self._net(module, task, device, seed, self.max_epochs, callbacks, valid_data)
        with clock.stage("epochs"), self._device_memory(len(train[0])):
            net.fit(_tensors(*train, task, device), None)
        return net

    def _deeper(self, shallow, module, train, task, valid, valid_part):
        """``depth="auto"``: train the depth-3 ``module`` from the trained depth-2 network
        (``shallow``, a skorch net) and keep it if validation confirms a gain.

        The deeper network starts exactly at the depth-2 model (:func:`~sknd._recipe.carry`
        on copies of its first block and Standardize layer), which early stopping scores
        as epoch 0: depth 3 is kept when a later epoch beat it (``best_epoch_ > 0``) and it
        also does better on the validation rows clean and under the paper's noise
        (:func:`~sknd._recipe.robust_monitored`), so that it can only gain what validation
        confirms, at the cost of one more training.
        """
        two = shallow.module_
        deep = copy.deepcopy(module).to(next(two.parameters()).device)
        deep[0], deep[1] = copy.deepcopy(two[0]), copy.deepcopy(two[1])
        _recipe.carry(deep, two)
        rows = rows_per_pass(deep)
        net = train(deep, _recipe.validation(two, task, valid, rows), valid_part)
        stopper = dict(net.callbacks_).get("early_stopping")
        scores = [_recipe.robust_monitored(m, task, valid, rows) for m in (two, net.module_)]
        better = (scores[1] < scores[0]) if task.lower_is_better else (scores[1] > scores[0])
        keep = bool(stopper.best_epoch_) and better
        if self.verbose:
            print(
                f"depth='auto': depth {3 if keep else 2} (depth 3 best at epoch "
                f"{stopper.best_epoch_} of its run, 0 being the depth-2 model; clean and noisy "
                f"validation {scores[0]:.4f} at depth 2, {scores[1]:.4f} at depth 3)"
            )
        return net if keep else shallow

    def _recipe_start(
        self, module, continuing, X_train, c_train, w_train, task, valid, clock, auto=False
    ):
        """Steps 1-3 of the recipe on ``module``: ``(start, selected, penalty, tuned,
        trained)``.

        ``start`` and ``selected`` are the :class:`~sknd._recipe.Validation` of the tuned
        start and of the model training starts from (None without ``valid``). A warm start
        keeps the fitted conditioning and head: both are the fitted model. ``trained`` is
        the network to train first: ``module`` started at the depth-2 model, or with
        ``auto`` (``depth="auto"``) that depth-2 model itself.
        """
        rows = rows_per_pass(module)
        if continuing:
            start = None if valid is None else _recipe.validation(module, task, valid, rows)
            return start, start, self.start_regularization_, True, module
        linear = _recipe.linear_part(module)
        target = self._convex_target(task, c_train)
        penalty, tuned = _recipe.prepare(linear, X_train, target, task, rows, w_train, valid, clock)
        start = selected = None
        if valid is not None:
            with clock.stage("refinement"):
                start, selected = _recipe.refine(
                    linear, X_train, target, task, rows, penalty, w_train, valid
                )
        if auto:
            return start, selected, penalty, tuned, linear
        _recipe.carry(module, linear)
        return start, selected, penalty, tuned, module

    def _fit_callbacks(self, task, X_valid, valid, selected, rows):
        """sknd's callbacks of ``fit``: the validation score and early stopping."""
        if X_valid is None:
            return []
        callbacks = [("valid_score", ValidationScore(task.score))]
        if self.early_stopping:
            # Epoch 0 is scored when training starts: a callback (LoadInitState) may
            # load other weights than those the recipe selected.
            start_score = None
            if selected is not None:
                start_score = functools.partial(_start_score, task=task, valid=valid, rows=rows)
            stopper = EarlyStopping(
                task.monitor, task.lower_is_better, self.patience, start_score=start_score
            )
            callbacks.append(("early_stopping", stopper))
        return callbacks

    def _recipe_refit(self, module, task, rows, penalty, train, valid):
        """Step 5 of the recipe: the output layer refitted on all rows."""
        (X_all, c_all, w_all), (X_valid, c_valid, w_valid) = train, valid
        if X_valid is not None:
            X_all = np.concatenate([X_all, X_valid])
            c_all = np.concatenate([c_all, c_valid])
            if w_all is not None:  # an explicit X_val is not weighted
                ones = np.ones(len(X_valid))
                w_all = np.concatenate([w_all, ones if w_valid is None else w_valid])
        target = self._convex_target(task, c_all)
        _recipe.refit(module, X_all, target, task, rows, penalty, w_all)

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
        if getattr(self, "class_weight", None) == "balanced":
            raise ValueError(
                "class_weight='balanced' needs the class counts of all the data, which "
                "partial_fit sees one part at a time. Compute the weights once with "
                "sklearn.utils.class_weight.compute_class_weight('balanced', classes=classes, "
                "y=y) and pass them as a dict: class_weight=dict(zip(classes, weights))."
            )
        X, codes, weight, task, _ = self._start_fit(
            X, y, sample_weight, continuing=continuing, how="partial_fit", classes=classes
        )
        n_calls = self.n_iter_ if continuing else 0
        # A new shuffling order each call, reproducible from random_state.
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        seed = (seed + n_calls) % np.iinfo(np.int32).max
        device = resolve_device(self.device)
        pairs, module = self._network(continuing, X, codes, weight, task, seed, device)
        with torch_threads(1):
            if self._uses_recipe() and not continuing:
                linear = _recipe.linear_part(module)
                target = self._convex_target(task, codes)
                self.start_regularization_, _ = _recipe.prepare(
                    linear, X, target, task, rows_per_pass(module), weight
                )
                _recipe.carry(module, linear)
            elif not continuing:
                self.start_regularization_ = None
            net = self._net(module, task, device, seed, 1, [], how="partial_fit")
            net.initialize()
            state = getattr(self, "_optimizer_state", None) if continuing else None
            if state is not None:
                net.optimizer_.load_state_dict(state)
                # set_params may have changed them; otherwise the optimizer keeps its values
                # (a callback such as LRScheduler may have set the learning rate).
                if (self.lr, self.weight_decay) != self._optimizer_params:
                    for group in net.optimizer_.param_groups:
                        group["lr"], group["weight_decay"] = self.lr, self.weight_decay
            if continuing:
                # The epochs so far: skorch callbacks continue from them (a scheduler's step;
                # torch schedulers resume from the groups' initial_lr, set by the first one).
                net.history = copy.deepcopy(self.net_.history)
                for group in net.optimizer_.param_groups:
                    group.setdefault("initial_lr", group["lr"])
            with self._device_memory(len(X)):
                net.partial_fit(_tensors(X, codes, weight, task, device), None)
        self._set_fitted_state(net, task, pairs, X, weight)
        if not continuing:
            self.depth_ = self._plain_depth()
        self.learning_gain_ = None  # no validation part to measure it on
        self._optimizer_state = _cpu_copy(net.optimizer_.state_dict())
        self._optimizer_params = (self.lr, self.weight_decay)
        self._finish_fit()

    def _finish_fit(self):
        """Attributes derived from the trained network (subclasses add theirs)."""
        self._set_indices()

    @staticmethod
    def _convex_target(task, encoded):
        """What the recipe's convex fits learn: class codes, or standardized targets."""
        if isinstance(task, ClassificationTask):
            return encoded
        return task.target_tensor(encoded).double().numpy()

    def _passthrough_scaling(self, X_train, weight=None):
        """(Weighted) ``(mean, scale)`` of the training bands for the raw passthrough, or None."""
        if not self.passthrough:
            return None
        X_train = np.asarray(X_train, dtype=np.float64)
        mean = np.average(X_train, axis=0, weights=weight)
        scale = np.sqrt(np.average((X_train - mean) ** 2, axis=0, weights=weight))
        # Constant bands would divide by zero; leave them centred but unscaled.
        scale[scale < 10 * np.finfo(np.float64).eps] = 1.0
        return mean, scale

    def _set_fitted_state(self, net, task, pairs, X_train, w_train=None):
        """Expose the trained network's results as numpy/pandas attributes.

        ``net`` is kept as ``net_``; its history holds the epochs of earlier
        ``partial_fit`` calls too.
        """
        module = net.module_.eval()
        columns = ["epoch", "train_loss", "valid_loss", "valid_score"]
        # Then the numbers a user's callbacks record each epoch (event_lr, scores).
        columns += [
            key
            for key in dict.fromkeys(key for row in net.history for key in row)
            if key not in _SKORCH_RECORDS
            and key not in columns
            and all(isinstance(row.get(key, 0.0), Real) for row in net.history)
        ]
        history = pd.DataFrame(
            {key: [row.get(key, np.nan) for row in net.history] for key in columns}
        )
        self.net_ = net
        self._module = module
        self._task = task
        self.n_outputs_ = task.n_outputs
        self.history_ = history
        self.n_iter_ = len(history)
        self.loss_curve_ = history["train_loss"].tolist()
        self.validation_scores_ = history["valid_score"].tolist()
        stopper = dict(net.callbacks_).get("early_stopping")
        if stopper is not None and stopper.best_epoch_ is not None:
            self.best_epoch_ = stopper.best_epoch_
            self.best_validation_score_ = float(stopper.best_score_)
        else:
            self.best_epoch_ = None
            self.best_validation_score_ = (
                None if history["valid_score"].isna().all() else float(history["valid_score"].max())
            )
        self.n_parameters_ = int(sum(p.numel() for p in module.parameters() if p.requires_grad))

        layer = self._nd_layer()
        importances = (
            self._index_importances(X_train, w_train)
            if layer is not None or self.passthrough
            else np.empty(0)
        )
        if self.passthrough:
            # The passthrough block appends the raw bands after the first block's outputs.
            n_features = X_train.shape[1]
            self.passthrough_importances_ = importances[-n_features:]
            importances = importances[:-n_features]
        else:
            self.passthrough_importances_ = np.empty(0)
        if layer is None:
            self.pairs_ = np.empty((0, 2), dtype=np.int64)
            self.coef_a_ = np.empty(0)
            self.coef_c_ = np.empty(0)
            self.index_importances_ = np.empty(0)
        else:
            self.pairs_ = pairs
            self.coef_a_ = layer.a.detach().cpu().double().numpy()
            self.coef_c_ = layer.c.detach().cpu().double().numpy()
            self.index_importances_ = importances

    def _index_importances(self, X, sample_weight=None):
        """Outgoing-weight norm of each first-block output times its spread on ``X``.

        An index that varies little on the data, or whose value the next layer
        ignores, cannot drive the prediction; the product ranks indices by how
        much they can move the next layer's pre-activations. The spread is that
        of what the next dense layer sees (the standardized outputs under the
        default recipe), weighted by ``sample_weight``.
        """
        records = describe(self._module)
        dense = next(i for i, layer in enumerate(records) if i > 0 and layer.kind == "linear")
        before = torch.nn.Sequential(*(layer.module for layer in records[:dense]))
        weight = records[dense].module.weight.detach().cpu().double().numpy()
        # The weighted variance, slab by slab (the outputs of millions of rows need not be
        # held at once), of the outputs shifted by the first slab's mean (no cancellation).
        slab = rows_per_pass(self._module)
        shift = total = first = second = 0.0
        for start in range(0, len(X), slab):
            features = self._run_module(X[start : start + slab], before)
            w = (
                np.ones(len(features))
                if sample_weight is None
                else sample_weight[start : start + slab]
            )
            if start == 0:
                shift = np.average(features, axis=0, weights=w if w.any() else None)
            features -= shift
            total += w.sum()
            first = first + w @ features
            second = second + w @ (features * features)
        mean = first / total
        spread = np.sqrt(np.maximum(second / total - mean * mean, 0.0))
        return np.linalg.norm(weight, axis=0) * spread
