"""How an sknd estimator trains: one :class:`Fit` per call of ``fit`` or ``partial_fit``.

The estimators' API (:class:`~sknd._estimators._base.BaseND`) checks the data of a call,
splits off the validation part and builds a :class:`Fit` from its parameters
(:class:`Settings`, values, not the estimator), the call's task, seed and device and the
training and validation :class:`~sknd._data._parts.Part`. The fit reads top-down, as
scikit-learn's ``_fit -> _fit_stochastic`` or skorch's ``fit -> fit_loop``:

:meth:`Fit.run` (``fit``, a warm start)
    :meth:`~Fit.choose_depth` (whether ``depth="auto"`` chooses on validation),
    :meth:`~Fit.network` (pairs screened, the network built),
    :meth:`~Fit.start` (the recipe's convex start and refinement, :mod:`sknd._training._recipe`),
    then :meth:`~Fit.wide_head` and :meth:`~Fit.auto_depth` (``depth="auto"``) or
    :meth:`~Fit.train` (Adam and early stopping in the skorch loop, :mod:`sknd._training._net`),
    and :meth:`~Fit.refit` (the output layer on all rows);
:meth:`Fit.epoch` (``partial_fit``)
    one epoch, the first call building the network and its start.

The fit's state (the parts, the clock, the network, the start's scores, the chosen depth)
lives on the object; the estimator reads the results off it (``net``, ``pairs``, ``depth``,
``gain``, ``penalty``) into its fitted attributes.
"""

import copy
import dataclasses
import functools
import threading
import typing

import numpy as np
import torch
from skorch.helper import predefined_split

from .._data._parts import Split
from .._data._tasks import ClassificationTask
from .._data._weights import weight_tensor
from .._inference._device import device_memory
from .._nd._pairs import estimator_pairs
from .._training import _recipe, _refinement, _wide_head
from .._training._adam import FlatAdam
from .._training._batches import TensorBatches, TensorDataset
from .._training._callbacks import BestEpochStopping, FiniteTraining, ValidationScore
from .._training._convex_start import MIN_SELECTION_ROWS, convex_budget
from .._training._memory import NetworkShape, check_training_memory
from .._training._net import Net
from .._training._user_callbacks import user_callbacks
from ..networks import build_network, default_hidden_units, describe, rows_per_pass

__all__ = ["Fit", "Previous", "Settings"]

#: The depth ``depth="auto"`` builds where it cannot choose on validation (no validation
#: part, ``recipe="paper"``, the MLP, ``partial_fit``): the paper's depth-2 model.
AUTO_PLAIN_DEPTH = 2

# Fits of one process draw initial weights from torch's global generator under this lock
# (see Fit.build). The thread policy (one torch thread) lives in sknd._threads.
_init_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class Settings:
    """The estimator's parameters as a fit uses them, passed by value.

    Made by :meth:`~sknd._estimators._base.BaseND._fit_settings`: ``variant`` and
    ``bands`` as frozen at fit (``variant_``, ``bands_``), ``train_noise`` the parameter of
    the estimators that take class labels (0.0 for the others), ``name`` the estimator's
    class, for messages.
    """

    name: str
    architecture: str
    depth: typing.Any
    hidden_units: typing.Any
    epsilon: typing.Any
    variant: str
    pairs: typing.Any
    bands: tuple
    lr: typing.Any
    weight_decay: typing.Any
    batch_size: int
    max_epochs: int
    early_stopping: bool
    patience: int
    verbose: typing.Any
    passthrough: bool
    recipe: str
    callbacks: typing.Any
    train_noise: typing.Any


class Previous(typing.NamedTuple):
    """The fitted model a warm start or ``partial_fit`` continues.

    ``module`` is a CPU copy of the fitted network (a failed or interrupted call leaves
    the fitted model intact); ``penalty`` is ``start_regularization_``; ``history`` the
    fitted net's; ``optimizer_state`` and ``optimizer_params`` (``(lr, weight_decay)``)
    those ``partial_fit`` kept (None after ``fit``).
    """

    pairs: np.ndarray
    module: torch.nn.Module
    penalty: typing.Any
    history: typing.Any
    optimizer_state: typing.Any
    optimizer_params: typing.Any


def _depth_of(module, architecture):
    """The depth of a network built by :func:`~sknd.networks.build_network`: its
    first layer, hidden layers and output layer (ReLUs and Standardize not counted)."""
    linears = sum(layer.kind == "linear" for layer in describe(module))
    return linears + (architecture != "mlp")


def _cpu_copy(state):
    """``state`` (an optimizer's ``state_dict``) with every tensor copied to the CPU."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu().clone()
    if isinstance(state, dict):
        return {key: _cpu_copy(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_cpu_copy(value) for value in state)
    return state


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


def passthrough_scaling(passthrough, X_train, weight=None):
    """(Weighted) ``(mean, scale)`` of the training bands for the raw passthrough, or None."""
    if not passthrough:
        return None
    X_train = np.asarray(X_train, dtype=np.float64)
    mean = np.average(X_train, axis=0, weights=weight)
    scale = np.sqrt(np.average((X_train - mean) ** 2, axis=0, weights=weight))
    # Constant bands would divide by zero; leave them centred but unscaled.
    scale[scale < 10 * np.finfo(np.float64).eps] = 1.0
    return mean, scale


class Fit:
    """One fit: its state and its stages, from the data to the trained skorch net.

    Parameters
    ----------
    settings : Settings
        The estimator's parameters.
    task : Task
        The target's task (:mod:`sknd._data._tasks`).
    seed : int
        Drawn from ``random_state``: the initial weights and the shuffling.
    device : str
        Where the network trains (:func:`~sknd._inference._device_choice.resolve_device`).
    training, validation : Part
        The training rows and the validation rows (None: no validation part).

    Attributes
    ----------
    scored : Part or None
        The recipe's validation part: its targets those the convex fits learn.
    clock : Stopwatch
        The wall time of each stage.
    pairs, module : ndarray, torch.nn.Module
        The pairs screened and the network built (or continued).
    scaling : tuple of ndarray or None
        The passthrough's ``(mean, scale)`` of the training bands, as the network was
        built with (None without passthrough or a new network).
    start_validation, selected : Validation or None
        The recipe's tuned start and the model training starts from, scored on
        ``scored``.
    penalty, tuned : float, bool
        The convex start's ``C`` / ``alpha`` and whether it was chosen on the data.
    net : Net
        The skorch net that trained the network kept.
    depth, gain : int, float or None
        The depth of the network kept; what learning the indices gained on validation.
    """

    def __init__(self, settings, task, seed, device, training, validation=None):
        self.settings = settings
        self.task, self.seed, self.device = task, seed, device
        self.training, self.validation = training, validation
        # sknd's default recipe (sknd._training._recipe): networks with an ND layer; deeper
        # ones start at the depth-2 model (_recipe.carry). The MLP trains as in the paper.
        self.recipe = settings.recipe == "sknd" and settings.architecture != "mlp"
        level = _refinement.NoisyCopies.level_of(settings.train_noise, settings.passthrough)
        # The noisy copies of the training rows that the recipe's convex fits, refinement
        # and refit also train on: for class labels, none otherwise.
        self.copies = _refinement.NoisyCopies.of(task, level)
        self.clock = _recipe.Stopwatch()
        self.scored = self.pairs = self.scaling = self.module = self.rows = None
        self.start_validation = self.selected = self.penalty = self.tuned = None
        self.net = self.head = self.depth = self.gain = None

    # ------------------------------------------------------------------ fit
    def run(self, previous=None):
        """``fit``: train a new network, or continue ``previous`` (a :class:`Previous`,
        ``warm_start``); return ``self`` with its results set."""
        settings, task = self.settings, self.task
        chooses, why_not = self.choose_depth(previous)
        if previous is None:
            self.pairs, self.module = self.network(3 if chooses else self.plain_depth())
        else:
            self.pairs, self.module = previous.pairs, previous.module
        self.rows = rows_per_pass(self.module)
        if self.recipe and self.validation is not None:
            self.scored = self.validation.with_target(self.convex_target(self.validation.target))
        trained = self.module
        if self.recipe:
            trained = self.start(previous, chooses)
            if settings.verbose and previous is None:
                _report_recipe(task, self.penalty, self.tuned, self.start_validation, self.selected)
        if chooses:
            self.net = self.wide_head(trained)
            if self.net is None:
                self.net = self.auto_depth(trained)
        else:
            self.net = self.train(trained, self.selected, self.validation)
        if self.start_validation is not None:
            after = _refinement.validation(self.net.module_, task, self.scored, self.rows)
            self.gain = after.score - self.start_validation.score
        self.refit()
        self.depth = _depth_of(self.net.module_, settings.architecture)
        if settings.verbose and self.recipe and previous is None:
            _report_gain(self.gain, self.clock)
        if settings.verbose and why_not is not None:
            print(f"depth='auto': depth {self.depth}, the plain rule: {why_not}")
        return self

    def plain_depth(self):
        """The depth built when none is chosen on validation: ``depth``, or 2 for "auto"."""
        depth = self.settings.depth
        return AUTO_PLAIN_DEPTH if depth == "auto" else depth

    def choose_depth(self, previous=None):
        """``(chooses, why_not)``: whether ``depth="auto"`` chooses between depths 2 and 3
        on the validation part, and why it cannot (None when it can, or was not asked)."""
        settings, valid = self.settings, self.validation
        if settings.depth != "auto" or previous is not None:
            return False, None
        if not self.recipe:
            why = f"the {settings.architecture!r} network under recipe={settings.recipe!r} has "
            return False, why + "no tuned depth-2 model for a deeper one to start at"
        if valid is None or not settings.early_stopping:
            return False, "no validation part to choose on (early_stopping=False, no X_val)"
        if settings.callbacks:
            return False, "callbacks follow one training run (pass depth=3 for the deeper one)"
        if valid.n_rows < MIN_SELECTION_ROWS:
            return False, f"fewer than {MIN_SELECTION_ROWS} validation rows"
        return True, None

    # ------------------------------------------------------------------ the network
    def network(self, depth):
        """Screen the pairs on the training part and build the network of ``depth`` (on
        the CPU); return ``(pairs, module)``."""
        settings, task, train = self.settings, self.task, self.training
        n_features = train.X.shape[1]
        self.pairs = estimator_pairs(
            settings.pairs,
            settings.bands,
            train.X,
            train.target,
            n_outputs=task.n_outputs,
            mlp_width=default_hidden_units(n_features * (n_features - 1) // 2),
            classification=isinstance(task, ClassificationTask),
            variant=settings.variant,
            epsilon=settings.epsilon,
            sample_weight=train.weight,
        )
        self.scaling = passthrough_scaling(settings.passthrough, train.X, train.weight)
        hidden_units = self.hidden_units(self.scaling, depth)
        self.check_memory(depth, hidden_units)
        return self.pairs, self.build(depth, hidden_units, self.scaling, self.device)

    def check_memory(self, depth, hidden_units):
        """Refuse a network and data that cannot fit in memory, before building it."""
        settings, task, train = self.settings, self.task, self.training
        n_features, n_pairs = train.X.shape[1], len(self.pairs)
        recipe_rows = 0
        if self.recipe:  # the convex fits' tables of rows x first-block outputs
            outputs = n_pairs + (n_features if settings.passthrough else 0)
            coefficients = (outputs + 1) * task.n_outputs
            recipe_rows = min(train.n_rows, convex_budget(coefficients))
        shape = NetworkShape(
            settings.architecture,
            n_features,
            n_pairs,
            task.n_outputs,
            depth,
            hidden_units,
            settings.passthrough,
        )
        check_training_memory(
            shape,
            batch_size=settings.batch_size,
            n_samples=train.n_rows,
            estimator_name=settings.name,
            recipe_rows=recipe_rows,
        )

    def hidden_units(self, scaling, depth):
        """The hidden width: ``hidden_units``, or its default for the recipe and ``depth``
        (``scaling``: the passthrough's, or None)."""
        settings, n_outputs = self.settings, self.task.n_outputs
        deep = depth > 2
        if settings.hidden_units is not None:
            if self.recipe and deep and settings.hidden_units < 2 * n_outputs:
                raise ValueError(
                    f"hidden_units={settings.hidden_units} is too narrow for recipe='sknd' at "
                    f"depth={depth}: the hidden layers carry its linear start in 2 x "
                    f"n_outputs = {2 * n_outputs} units. Use hidden_units >= "
                    f"{2 * n_outputs}, hidden_units=None or recipe='paper'."
                )
            return settings.hidden_units
        if not (self.recipe and deep):
            return default_hidden_units(len(self.pairs))
        n_features = self.training.X.shape[1]
        with torch.device("meta"):  # shapes only: no memory, no random draws
            depth2 = build_network(
                settings.architecture,
                n_features,
                n_outputs,
                pairs=self.pairs,
                variant=settings.variant,
                passthrough=scaling,
                standardize=True,
            )
        return _recipe.hidden_units(depth2, n_features)

    def build(self, depth, hidden_units, scaling, device):
        """The network of ``depth`` and ``hidden_units`` on :attr:`pairs`, its initial
        weights drawn from :attr:`seed` (``scaling``: the passthrough's, or None)."""
        settings = self.settings
        # Weights are drawn from torch's global generator: seed it inside fork_rng (the
        # caller's state comes back afterwards) and under a lock, so fits running in threads
        # of one process neither see each other's seeds nor restore each other's states.
        # Training itself draws only from its own shuffling generator.
        cuda_devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
        with _init_lock, torch.random.fork_rng(devices=cuda_devices):
            torch.manual_seed(self.seed)
            return build_network(
                settings.architecture,
                self.training.X.shape[1],
                self.task.n_outputs,
                depth=depth,
                hidden_units=hidden_units,
                pairs=self.pairs,
                epsilon=settings.epsilon,
                variant=settings.variant,
                passthrough=scaling,
                standardize=self.recipe,
            )

    # ------------------------------------------------------------------ the stages
    def start(self, previous=None, chooses=False):
        """Steps 1-3 of the recipe on :attr:`module`; return the network training starts
        from.

        Sets :attr:`start_validation` and :attr:`selected` (the tuned start's and the
        refined start's :class:`~sknd._training._refinement.Validation`; None without
        :attr:`scored`), :attr:`penalty` and :attr:`tuned`. A warm start (``previous``)
        keeps the fitted conditioning and head: both are the fitted model. The network
        returned is :attr:`module` started at the depth-2 model, or where ``chooses``
        (``depth="auto"``) that depth-2 model itself, which :meth:`auto_depth` starts
        :attr:`module` at.
        """
        task, scored, rows = self.task, self.scored, self.rows
        if previous is not None:
            if scored is not None:
                self.start_validation = _refinement.validation(self.module, task, scored, rows)
            self.selected = self.start_validation
            self.penalty, self.tuned = previous.penalty, True
            return self.module
        linear = _recipe.linear_part(self.module)
        train = self.training.with_target(self.convex_target(self.training.target))
        split = Split(train, scored)
        self.penalty, self.tuned = _recipe.prepare(
            linear, split, task, rows, self.copies, self.clock
        )
        if scored is not None:
            with self.clock.stage("refinement"):
                self.start_validation, self.selected = _refinement.refine(
                    linear, split, task, rows, self.penalty, self.copies
                )
        if chooses:
            return linear
        _recipe.carry(self.module, linear)
        return self.module

    def wide_head(self, linear):
        """``depth="auto"``'s first candidate: a depth-3 network of
        :data:`~sknd._training._wide_head.WIDTH` hidden units (or ``hidden_units``) on the
        depth-2 start ``linear``'s first block and Standardize layer (its indices as the
        tuned start and the refinement left them), its head trained as the invariant peer
        is trained (:class:`~sknd._training._wide_head.WideHead`; the clock's stage "wide
        head").

        Returns its net (no Adam epochs: early stopping's epoch 0 is the head) and keeps
        the :class:`~sknd._training._wide_head.WideHead` as :attr:`head`, whose ``refit``
        then trains it anew on all rows, where the head's validation losses beat the
        depth-2 start :attr:`selected`'s by more than their standard error
        (:func:`~sknd._training._convex_start.one_standard_error`, which keeps the simpler
        model otherwise). Returns None where they do not, or where no head is trained
        (regression, fewer than :data:`~sknd._training._wide_head.MIN_ROWS` training
        rows), and :meth:`auto_depth` decides. Training the whole network on from the head
        (Adam at ``lr``) never beat the head on satimage-36 (its best epoch was the head) and
        took far longer (benchmarks/RESULTS.md, "The default against the peers it contains:
        the wide head").
        """
        settings, train, scored = self.settings, self.training, self.scored
        why_not = _wide_head.why_not(self.task, train.n_rows)
        if why_not is not None:
            if settings.verbose:
                print(f"depth='auto': no wide head: {why_not}")
            return None
        width = _wide_head.WIDTH if settings.hidden_units is None else settings.hidden_units
        wide = self.build(3, width, self.scaling, "cpu")
        wide[0], wide[1] = copy.deepcopy(linear[0]), copy.deepcopy(linear[1])
        with self.clock.stage("wide head"):
            # For class labels the recipe's validation part is the validation part itself.
            trainer = self.wide_head_trainer(wide)
            head = trainer.train(wide)
        keep, words = _wide_head.beats(head, self.selected, scored.weight)
        if settings.verbose:
            print(f"depth='auto': wide head of {width} units: {words}")
        if not keep:
            return None
        self.head = trainer
        return self.train(wide, head, scored, 0)

    def wide_head_trainer(self, wide):
        """The :class:`~sknd._training._wide_head.WideHead` that trains ``wide``'s head (the
        one call into :mod:`sknd._training._wide_head`'s trainer)."""
        return _wide_head.WideHead(
            wide,
            self.training,
            self.scored,
            self.task,
            self.copies.level,
            self.seed,
        )

    def auto_depth(self, linear):
        """``depth="auto"``: train the depth-3 :attr:`module` from the depth-2 start
        ``linear`` and keep it where validation confirms a gain; otherwise train ``linear``.

        The deeper network starts exactly at the depth-2 start
        (:func:`~sknd._training._recipe.carry` on copies of its first block and Standardize
        layer), which early stopping scores as epoch 0 (:attr:`selected`, its
        :class:`~sknd._training._refinement.Validation`): depth 3 is kept when a later epoch
        beat it (``best_epoch_ > 0``) and it also does better by early stopping's monitored
        value on the validation rows (:func:`~sknd._training._refinement.validation`).
        Otherwise the depth-2 start is trained as ``depth=2`` trains it. The result is so the
        ``depth=3`` or the ``depth=2`` fit, and the second training runs only where depth 3
        did not pay. (Training depth 2 first and depth 3 from it took longer, for a lower
        accuracy on forest type and about the same on the satimage centre pixel:
        benchmarks/RESULTS.md, "A cheaper default: depth 3 first, Newton steps for small
        heads, a float32 ``C`` path".)
        """
        module, task, selected = self.module, self.task, self.selected
        module[0], module[1] = copy.deepcopy(linear[0]), copy.deepcopy(linear[1])
        _recipe.carry(module, linear)
        net = self.train(module, selected, self.validation)
        stopper = dict(net.callbacks_).get("early_stopping")
        deep = _refinement.validation(net.module_, task, self.scored, self.rows)
        scores = [selected.monitored(task), deep.monitored(task)]
        better = (scores[1] < scores[0]) if task.lower_is_better else (scores[1] > scores[0])
        keep = bool(stopper.best_epoch_) and better
        if self.settings.verbose:
            print(
                f"depth='auto': depth {3 if keep else 2} (depth 3 best at epoch "
                f"{stopper.best_epoch_} of its run, 0 being the depth-2 start; validation "
                f"{scores[0]:.4f} at the depth-2 start, {scores[1]:.4f} at depth 3)"
            )
        return net if keep else self.train(linear, selected, self.validation)

    def train(self, module, selected, valid, max_epochs=None):
        """Train ``module`` with Adam and early stopping on ``valid`` (a
        :class:`~sknd._data._parts.Part` or None); return the skorch net.

        ``selected`` is the :class:`~sknd._training._refinement.Validation` of ``module``
        when it is the recipe's start. ``max_epochs`` overrides the estimator's (0: the net
        of ``module`` as it is).
        """
        settings, train = self.settings, self.training
        callbacks = self.callbacks(valid, selected, rows_per_pass(module))
        valid_data = None if valid is None else self.tensors(valid)
        max_epochs = settings.max_epochs if max_epochs is None else max_epochs
        net = self.skorch_net(module, max_epochs, callbacks, valid_data)
        if selected is not None:  # from the recipe's start
            warmup = _recipe.warmup_steps(module, self.task, train.n_rows, settings.batch_size)
            net.set_params(optimizer__warmup_steps=warmup)
        with self.clock.stage("epochs"), self.device_memory(train.n_rows):
            net.fit(self.tensors(train), None)
        return net

    def refit(self):
        """Step 5: the output layer on all rows.

        A kept wide head (:attr:`head`) is trained anew on all rows for the epochs
        validation kept (as scikit-learn's MLP trains on all of them: benchmarks/RESULTS.md,
        "The kept wide head trained anew on all rows"); the recipe refits any other network's
        output layer.
        """
        if self.head is not None:
            with self.clock.stage("refit"):
                self.head.refit(self.net.module_)
        elif self.recipe:
            with self.clock.stage("refit"):
                data = self.training
                if self.validation is not None:
                    data = data.joined(self.validation)
                data = data.with_target(self.convex_target(data.target))
                _recipe.refit(
                    self.net.module_, data, self.task, self.rows, self.penalty, self.copies
                )

    # ------------------------------------------------------------------ partial_fit
    def epoch(self, previous=None):
        """``partial_fit``: one epoch on the training part, continuing ``previous`` (a
        :class:`Previous`) or, on the first call, a new network from the recipe's convex
        start; return ``self`` with its results set."""
        if previous is None:
            self.depth = self.plain_depth()
            self.pairs, self.module = self.network(self.depth)
            if self.recipe:
                linear = _recipe.linear_part(self.module)
                learned = self.training.with_target(self.convex_target(self.training.target))
                rows = rows_per_pass(self.module)
                self.penalty, _ = _recipe.prepare(
                    linear, Split(learned), self.task, rows, self.copies
                )
                _recipe.carry(self.module, linear)
        else:
            self.pairs, self.module = previous.pairs, previous.module
        net = self.skorch_net(self.module, 1, [], how="partial_fit")
        net.initialize()
        if previous is not None:
            self.resume(net, previous)
        with self.device_memory(self.training.n_rows):
            net.partial_fit(self.tensors(self.training), None)
        self.net = net
        return self

    def resume(self, net, previous):
        """Give ``net`` (initialised) the optimizer state and the epochs of ``previous``."""
        settings = self.settings
        if previous.optimizer_state is not None:
            net.optimizer_.load_state_dict(previous.optimizer_state)
            # set_params may have changed them; otherwise the optimizer keeps its values
            # (a callback such as LRScheduler may have set the learning rate).
            if (settings.lr, settings.weight_decay) != previous.optimizer_params:
                for group in net.optimizer_.param_groups:
                    group["lr"], group["weight_decay"] = settings.lr, settings.weight_decay
        # The epochs so far: skorch callbacks continue from them (a scheduler's step;
        # torch schedulers resume from the groups' initial_lr, set by the first one).
        net.history = copy.deepcopy(previous.history)
        for group in net.optimizer_.param_groups:
            group.setdefault("initial_lr", group["lr"])

    def optimizer_state(self):
        """The trained optimizer's ``state_dict`` on the CPU, for the next ``partial_fit``."""
        return _cpu_copy(self.net.optimizer_.state_dict())

    # ------------------------------------------------------------------ the loop
    def skorch_net(self, module, max_epochs, callbacks, valid_data=None, how="this fit"):
        """The skorch net that trains ``module`` (an initialised instance) on the device.

        ``callbacks`` are sknd's; the user's (copies of ``callbacks``) run after
        them but before sknd's early stopping, which so scores and keeps the weights
        training starts from once a callback such as ``LoadInitState`` has set them,
        and restores its best epoch last.
        """
        settings, task = self.settings, self.task
        rows = rows_per_pass(module)
        stopping = [item for item in callbacks if item[0] == "early_stopping"]
        own = [item for item in callbacks if item[0] != "early_stopping"]
        users = user_callbacks(
            settings.callbacks,
            early_stopping=bool(stopping),
            validation=valid_data is not None,
            how=how,
            task=task,
        )
        net = Net(
            module=module,
            criterion=task.criterion,
            optimizer=FlatAdam,
            lr=settings.lr,
            optimizer__weight_decay=settings.weight_decay,
            max_epochs=max_epochs,
            batch_size=settings.batch_size,
            train_split=None if valid_data is None else predefined_split(valid_data),
            iterator_train=TensorBatches,
            iterator_train__shuffle=True,
            iterator_train__generator=torch.Generator().manual_seed(self.seed),
            iterator_valid=TensorBatches,
            iterator_valid__batch_size=rows,
            # First, so that a non-finite epoch stops fit before any other callback uses it.
            callbacks=[("finite_training", FiniteTraining()), *own, *users, *stopping],
            device=self.device,
            verbose=settings.verbose,
        )
        net.task_ = task  # net_.predict and predict_proba decode as the estimator does
        return net

    def callbacks(self, valid, selected, rows):
        """sknd's callbacks of ``fit``: the validation score and early stopping."""
        if valid is None:
            return []
        task = self.task
        callbacks = [("valid_score", ValidationScore(task.score))]
        if self.settings.early_stopping:
            # Epoch 0 is scored when training starts: a callback (LoadInitState) may
            # load other weights than those the recipe selected.
            start_score = None
            if selected is not None:
                start_score = functools.partial(
                    _start_score, task=task, valid=self.scored, rows=rows
                )
            stopper = BestEpochStopping(
                task.monitor, task.lower_is_better, self.settings.patience, start_score=start_score
            )
            callbacks.append(("early_stopping", stopper))
        return callbacks

    def tensors(self, part):
        """The :class:`~sknd._data._parts.Part` ``part`` as a
        :class:`~sknd._training._batches.TensorDataset` of float32 bands, targets and
        weights on the device."""
        return TensorDataset(
            torch.tensor(part.X, dtype=torch.float32, device=self.device),
            self.task.target_tensor(part.target).to(self.device),
            weight_tensor(part.weight, self.device),
        )

    def device_memory(self, n_samples):
        """Out of memory on the GPU during training: a ``MemoryError`` naming ``batch_size``."""
        return device_memory(
            f"while training on {n_samples} samples",
            f"batch_size (now {self.settings.batch_size})",
        )

    def convex_target(self, encoded):
        """What the recipe's convex fits learn: class codes, or standardized targets."""
        if isinstance(self.task, ClassificationTask):
            return encoded
        return self.task.target_tensor(encoded).double().numpy()
