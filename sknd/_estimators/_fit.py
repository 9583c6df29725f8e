"""How the sknd estimators train: fit, warm start and ``partial_fit`` over skorch.

:class:`FittingMixin` holds the training half of :class:`~sknd._estimators._base.BaseND`: pair
screening, building the network, sknd's recipe (:mod:`sknd._training._recipe`), ``depth="auto"`` and
the skorch loop (:mod:`sknd._training._net`). The data of a call and its validation split are
:mod:`sknd._estimators._fit_data`, the fitted attributes :mod:`sknd._estimators._fitted_state`, the
device :mod:`sknd._inference._device_choice`;
:func:`~sknd._estimators._fit_guards.restore_on_failure` makes every fitting method all or nothing.
"""

import copy
import functools
import threading

import numpy as np
import torch
from sklearn.utils import check_random_state
from skorch.helper import predefined_split

from .._data._tasks import ClassificationTask
from .._data._validation import check_training_memory
from .._data._weights import weight_tensor
from .._inference._device import device_memory
from .._inference._device_choice import resolve_device
from .._nd._pairs import estimator_pairs
from .._threads import one_thread
from .._training import _recipe, _refinement, _wide_head
from .._training._adam import FlatAdam
from .._training._batches import TensorBatches, TensorDataset
from .._training._callbacks import BestEpochStopping, FiniteTraining, ValidationScore
from .._training._convex_start import MIN_SELECTION_ROWS, convex_budget
from .._training._net import Net
from .._training._user_callbacks import user_callbacks
from ..networks import build_network, default_hidden_units, describe, rows_per_pass
from ._fit_data import FitDataMixin
from ._fitted_state import FittedStateMixin

__all__ = ["FittingMixin"]

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


def _cpu_copy(state):
    """``state`` (an optimizer's ``state_dict``) with every tensor copied to the CPU."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu().clone()
    if isinstance(state, dict):
        return {key: _cpu_copy(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_cpu_copy(value) for value in state)
    return state


def _tensors(part, task, device):
    """The :class:`~sknd._data._parts.Part` ``part`` as a
    :class:`~sknd._training._batches.TensorDataset` of float32 bands, targets and weights."""
    return TensorDataset(
        torch.tensor(part.X, dtype=torch.float32, device=device),
        task.target_tensor(part.target).to(device),
        weight_tensor(part.weight, device),
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
    time of each stage (a :class:`~sknd._training._recipe.Stopwatch`)."""
    if gain is not None:
        print(f"recipe: learning_gain_={gain:+.4f} after training")
    print(f"recipe: stage times: {clock}")


def _start_score(module, task, valid, rows):
    """Early stopping's epoch 0: the monitored validation value of ``module``."""
    return _refinement.validation(module, task, valid, rows).monitored(task)


class FittingMixin(FitDataMixin, FittedStateMixin):
    """Training for ``BaseND`` (its parameters and validation: :mod:`sknd._estimators._base`).

    ``_fit`` trains a new network, or continues the fitted one under
    ``warm_start``; ``_partial_fit`` runs one epoch per call. Subclasses provide
    ``_make_task``, ``_validate_X_y`` and ``_finish_fit``'s additions.
    """

    def _uses_recipe(self):
        # sknd's default recipe (sknd._training._recipe): networks with an ND layer; deeper ones
        # start at the depth-2 model (_recipe.carry). The MLP trains as in the paper.
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

    def _new_network(self, train, task, seed, device, depth):
        """Screen the pairs on the training :class:`~sknd._data._parts.Part` ``train`` and
        build the network of ``depth`` (on the CPU); return ``(pairs, module)``."""
        X_train, w_train = train.X, train.weight
        n_features = X_train.shape[1]
        pairs = estimator_pairs(
            self.pairs,
            self.bands_,
            X_train,
            train.target,
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
            recipe_rows = min(len(X_train), convex_budget(coefficients))
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
        module = self._build(
            n_features, task, pairs, passthrough, depth, hidden_units, seed, device
        )
        return pairs, module

    def _build(self, n_features, task, pairs, passthrough, depth, hidden_units, seed, device):
        """The network of ``depth`` and ``hidden_units`` on ``pairs``, its initial weights
        drawn from ``seed``."""
        # Weights are drawn from torch's global generator: seed it inside fork_rng (the
        # caller's state comes back afterwards) and under a lock, so fits running in threads
        # of one process neither see each other's seeds nor restore each other's states.
        # Training itself draws only from its own shuffling generator.
        cuda_devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
        with _init_lock, torch.random.fork_rng(devices=cuda_devices):
            torch.manual_seed(seed)
            return build_network(
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

    def _network(self, continuing, train, task, seed, device, depth=None):
        """``(pairs, module)`` to train: a copy of the fitted network, or a new one of
        ``depth`` (None: :meth:`_plain_depth`).

        Continuing trains a copy, so that a failed or interrupted warm start or
        ``partial_fit`` leaves the fitted model intact.
        """
        if continuing:
            return self.pairs_, copy.deepcopy(self._module).cpu()
        depth = self._plain_depth() if depth is None else depth
        return self._new_network(train, task, seed, device, depth)

    def _plain_depth(self):
        """The depth built when none is chosen on validation: ``depth``, or 2 for "auto"."""
        return AUTO_PLAIN_DEPTH if self.depth == "auto" else self.depth

    def _auto_depth(self, continuing, valid):
        """``(chooses, why_not)``: whether ``depth="auto"`` chooses between depths 2 and 3
        on the validation part, and why it cannot (None when it can, or was not asked)."""
        if self.depth != "auto" or continuing:
            return False, None
        if not self._uses_recipe():
            why = f"the {self.architecture!r} network under recipe={self.recipe!r} has no tuned "
            return False, why + "depth-2 model for a deeper one to start at"
        if valid is None or not self.early_stopping:
            return False, "no validation part to choose on (early_stopping=False, no X_val)"
        if self.callbacks:
            return False, "callbacks follow one training run (pass depth=3 for the deeper one)"
        if valid.n_rows < MIN_SELECTION_ROWS:
            return False, f"fewer than {MIN_SELECTION_ROWS} validation rows"
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

    @one_thread()
    def _fit(self, X, y, X_val=None, y_val=None, groups=None, sample_weight=None):
        """``fit``: train a new network, or continue the fitted one with ``warm_start``."""
        continuing = self.warm_start and hasattr(self, "_module")
        data, task, groups = self._start_fit(
            X, y, sample_weight, continuing=continuing, how="warm_start=True", groups=groups
        )
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        device = resolve_device(self.device)
        train, valid = self._validation_split(data, task, X_val, y_val, seed, groups)
        recipe = self._uses_recipe()
        auto, why_not = self._auto_depth(continuing, valid)
        pairs, module = self._network(continuing, train, task, seed, device, 3 if auto else None)
        rows = rows_per_pass(module)
        # The recipe's validation part: the targets its convex fits learn.
        scored = None
        if recipe and valid is not None:
            scored = valid.with_target(self._convex_target(task, valid.target))
        clock = _recipe.Stopwatch()
        start = selected = penalty = tuned = None
        linear = module
        if recipe:
            start, selected, penalty, tuned, linear = self._recipe_start(
                module, continuing, train, task, scored, clock, auto
            )
        if self.verbose and recipe and not continuing:
            _report_recipe(task, penalty, tuned, start, selected)
        fit_net = functools.partial(self._train, task, device, seed, train, scored, clock)
        net = wide_head = None
        if auto:
            net, wide_head = self._wide_head_net(
                linear, pairs, train, task, seed, selected, scored, fit_net, clock
            )
        if auto and net is None:
            net = self._auto_depth_net(linear, module, fit_net, task, selected, scored, valid)
        elif not auto:
            net = fit_net(linear, selected, valid)
        gain = None
        if start is not None:
            gain = _refinement.validation(net.module_, task, scored, rows).score - start.score
        # A kept wide head is trained anew on all rows for the epochs validation kept (as
        # scikit-learn's MLP trains on all of them); step 5 refits any other network's
        # output layer (benchmarks/RESULTS.md).
        if wide_head is not None:
            with clock.stage("refit"):
                wide_head.refit(net.module_)
        elif recipe:
            with clock.stage("refit"):
                self._recipe_refit(net.module_, task, rows, penalty, train, valid)

        self._set_fitted_state(net, task, pairs, train.X, train.weight)
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

    def _train(
        self, task, device, seed, train, scored, clock, module, selected, valid, max_epochs=None
    ):
        """Train ``module`` with Adam and early stopping; return the skorch net.

        ``train`` and ``valid`` (or None) are the :class:`~sknd._data._parts.Part` of the
        training and validation rows; ``scored`` is the recipe's validation part (its
        targets the convex fits', None outside the recipe) and ``selected`` the
        :class:`~sknd._training._refinement.Validation` of ``module`` when it is the recipe's
        start. ``max_epochs`` overrides the estimator's (0: the net of ``module`` as it is).
        """
        rows = rows_per_pass(module)
        callbacks = self._fit_callbacks(task, valid, scored, selected, rows)
        valid_data = None if valid is None else _tensors(valid, task, device)
        max_epochs = self.max_epochs if max_epochs is None else max_epochs
        net = self._net(module, task, device, seed, max_epochs, callbacks, valid_data)
        if selected is not None:  # from the recipe's start
            warmup = _recipe.warmup_steps(module, task, train.n_rows, self.batch_size)
            net.set_params(optimizer__warmup_steps=warmup)
        with clock.stage("epochs"), self._device_memory(train.n_rows):
            net.fit(_tensors(train, task, device), None)
        return net

    def _wide_head_net(self, linear, pairs, train, task, seed, selected, scored, fit_net, clock):
        """``depth="auto"``'s first candidate: a depth-3 network of
        :data:`~sknd._training._wide_head.WIDTH` hidden units (or ``hidden_units``) on the depth-2
        start's first block and Standardize layer (its indices as the tuned start and the
        refinement left them), its head trained as the invariant peer is trained
        (:class:`~sknd._training._wide_head.WideHead`; ``clock``'s stage "wide head").

        Returns ``(net, head)``: its net (no Adam epochs: early stopping's epoch 0 is the
        head) and the :class:`~sknd._training._wide_head.WideHead`, whose ``refit`` then
        trains it anew on all rows, where the
        head's validation losses beat the depth-2 start ``selected``'s by more than their
        standard error (:func:`~sknd._training._convex_start.one_standard_error`, which keeps the
        simpler model otherwise); ``(None, None)`` where they do not, or where no head is
        trained (regression, fewer than :data:`~sknd._training._wide_head.MIN_ROWS` training
        rows), and :meth:`_auto_depth_net` decides. Training the whole network on from the head
        (Adam at ``lr``) never beat it on satimage-36 and more than doubled the fit's time
        (benchmarks/RESULTS.md).
        """
        why_not = _wide_head.why_not(task, train.n_rows)
        if why_not is not None:
            if self.verbose:
                print(f"depth='auto': no wide head: {why_not}")
            return None, None
        width = _wide_head.WIDTH if self.hidden_units is None else self.hidden_units
        passthrough = self._passthrough_scaling(train.X, train.weight)
        wide = self._build(train.X.shape[1], task, pairs, passthrough, 3, width, seed, "cpu")
        wide[0], wide[1] = copy.deepcopy(linear[0]), copy.deepcopy(linear[1])
        level = self._noisy_copies(task).level
        with clock.stage("wide head"):
            # For class labels the recipe's validation part is the validation part itself.
            trainer = _wide_head.WideHead(
                wide, train, scored, task, rows_per_pass(wide), level, seed
            )
            head = trainer.train(wide)
        keep, words = _wide_head.beats(head, selected, scored.weight)
        if self.verbose:
            print(f"depth='auto': wide head of {width} units: {words}")
        return (fit_net(wide, head, scored, max_epochs=0), trainer) if keep else (None, None)

    def _auto_depth_net(self, linear, module, fit_net, task, selected, scored, valid):
        """``depth="auto"``: train the depth-3 ``module`` from the depth-2 start ``linear``
        and keep it where validation confirms a gain; otherwise train ``linear``.

        The deeper network starts exactly at the depth-2 start
        (:func:`~sknd._training._recipe.carry` on copies of its first block and Standardize layer),
        which early stopping scores as epoch 0 (``selected``, its
        :class:`~sknd._training._refinement.Validation`): depth 3 is kept when a later epoch beat it
        (``best_epoch_ > 0``) and it also does better by early stopping's monitored value on the
        validation rows (:func:`~sknd._training._refinement.validation`). Otherwise the depth-2
        start is trained as ``depth=2`` trains it. The result is so the ``depth=3`` or the
        ``depth=2`` fit, and the second training runs only where depth 3 did not pay. (Training
        depth 2 first and depth 3 from it cost a third more, for 87.76 against 89.11 on forest type,
        10 folds, and 74.22 against 74.09 on the satimage centre pixel, 5 folds;
        benchmarks/RESULTS.md.)
        """
        module[0], module[1] = copy.deepcopy(linear[0]), copy.deepcopy(linear[1])
        _recipe.carry(module, linear)
        net = fit_net(module, selected, valid)
        stopper = dict(net.callbacks_).get("early_stopping")
        deep = _refinement.validation(net.module_, task, scored, rows_per_pass(module))
        scores = [selected.monitored(task), deep.monitored(task)]
        better = (scores[1] < scores[0]) if task.lower_is_better else (scores[1] > scores[0])
        keep = bool(stopper.best_epoch_) and better
        if self.verbose:
            print(
                f"depth='auto': depth {3 if keep else 2} (depth 3 best at epoch "
                f"{stopper.best_epoch_} of its run, 0 being the depth-2 start; validation "
                f"{scores[0]:.4f} at the depth-2 start, {scores[1]:.4f} at depth 3)"
            )
        return net if keep else fit_net(linear, selected, valid)

    def _recipe_start(self, module, continuing, train, task, scored, clock, auto=False):
        """Steps 1-3 of the recipe on ``module``: ``(start, selected, penalty, tuned,
        trained)``.

        ``start`` and ``selected`` are the :class:`~sknd._training._refinement.Validation` of the
        tuned start and of the model training starts from (None without ``scored``, the
        recipe's validation :class:`~sknd._data._parts.Part`). A warm start
        keeps the fitted conditioning and head: both are the fitted model. ``trained`` is
        ``module`` started at the depth-2 model, or with ``auto`` (``depth="auto"``) that
        depth-2 model itself, which :meth:`_auto_depth_net` starts ``module`` at.
        """
        rows = rows_per_pass(module)
        if continuing:
            start = None if scored is None else _refinement.validation(module, task, scored, rows)
            return start, start, self.start_regularization_, True, module
        linear = _recipe.linear_part(module)
        train = train.with_target(self._convex_target(task, train.target))
        copies = self._noisy_copies(task)
        penalty, tuned = _recipe.prepare(linear, train, task, rows, copies, scored, clock)
        start = selected = None
        if scored is not None:
            with clock.stage("refinement"):
                start, selected = _refinement.refine(
                    linear, train, task, rows, penalty, scored, copies
                )
        if auto:
            return start, selected, penalty, tuned, linear
        _recipe.carry(module, linear)
        return start, selected, penalty, tuned, module

    def _fit_callbacks(self, task, valid, scored, selected, rows):
        """sknd's callbacks of ``fit``: the validation score and early stopping."""
        if valid is None:
            return []
        callbacks = [("valid_score", ValidationScore(task.score))]
        if self.early_stopping:
            # Epoch 0 is scored when training starts: a callback (LoadInitState) may
            # load other weights than those the recipe selected.
            start_score = None
            if selected is not None:
                start_score = functools.partial(_start_score, task=task, valid=scored, rows=rows)
            stopper = BestEpochStopping(
                task.monitor, task.lower_is_better, self.patience, start_score=start_score
            )
            callbacks.append(("early_stopping", stopper))
        return callbacks

    def _noisy_copies(self, task):
        """The :class:`~sknd._training._refinement.NoisyCopies` of the training rows that the
        recipe's convex fits, refinement and refit also train on: ``train_noise`` (a
        classifier's and the transformer's parameter) for class labels, none otherwise."""
        level = _refinement.NoisyCopies.level_of(
            getattr(self, "train_noise", 0.0), self.passthrough
        )
        return _refinement.NoisyCopies.of(task, level)

    def _recipe_refit(self, module, task, rows, penalty, train, valid):
        """Step 5 of the recipe: the output layer refitted on all rows."""
        data = train if valid is None else train.joined(valid)
        data = data.with_target(self._convex_target(task, data.target))
        _recipe.refit(module, data, task, rows, penalty, self._noisy_copies(task))

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
        if getattr(self, "class_weight", None) == "balanced":
            raise ValueError(
                "class_weight='balanced' needs the class counts of all the data, which "
                "partial_fit sees one part at a time. Compute the weights once with "
                "sklearn.utils.class_weight.compute_class_weight('balanced', classes=classes, "
                "y=y) and pass them as a dict: class_weight=dict(zip(classes, weights))."
            )
        data, task, _ = self._start_fit(
            X, y, sample_weight, continuing=continuing, how="partial_fit", classes=classes
        )
        n_calls = self.n_iter_ if continuing else 0
        # A new shuffling order each call, reproducible from random_state.
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        seed = (seed + n_calls) % np.iinfo(np.int32).max
        device = resolve_device(self.device)
        pairs, module = self._network(continuing, data, task, seed, device)
        if self._uses_recipe() and not continuing:
            linear = _recipe.linear_part(module)
            learned = data.with_target(self._convex_target(task, data.target))
            self.start_regularization_, _ = _recipe.prepare(
                linear, learned, task, rows_per_pass(module), self._noisy_copies(task)
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
        with self._device_memory(data.n_rows):
            net.partial_fit(_tensors(data, task, device), None)
        self._set_fitted_state(net, task, pairs, data.X, data.weight)
        if not continuing:
            self.depth_ = self._plain_depth()
        self.learning_gain_ = None  # no validation part to measure it on
        self._optimizer_state = _cpu_copy(net.optimizer_.state_dict())
        self._optimizer_params = (self.lr, self.weight_decay)
        self._finish_fit()

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
