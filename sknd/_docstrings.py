"""Docstring sections shared by the sknd estimators, and the decorator that inserts them.

Each estimator writes its own docstring with placeholders such as ``{parameters}`` on a
line of their own; :class:`Substitution`, applied at the class (or function, as in
:mod:`sknd.raster`), replaces each by a section below, indented like the placeholder.
"""

import re
import textwrap

__all__ = [
    "ATTRIBUTES_DOC",
    "CLASS_WEIGHT_DOC",
    "TRAIN_NOISE_DOC",
    "FIT_OPTIONS_DOC",
    "NOTES_DOC",
    "PARAMETERS_DOC",
    "TRANSFORMER_PARAMETERS_DOC",
    "Substitution",
]


class Substitution:
    r"""Decorator filling the ``{name}`` placeholders of a docstring with named sections.

    Applied at the class or function whose docstring it completes (as
    imbalanced-learn's ``Substitution``), so the docstring reads in place.

    A placeholder stands alone on its line; the section replacing it is
    dedented, stripped of blank lines at its ends and indented like the
    placeholder, so that sections read the same in every docstring. Braces
    elsewhere in the docstring are left alone (no ``str.format`` escaping).

    Parameters
    ----------
    **sections : str
        Text of each placeholder, by name.

    Examples
    --------
    >>> @Substitution(params="x : int\n    The value.")
    ... class A:
    ...     '''Example.
    ...
    ...     Parameters
    ...     ----------
    ...     {params}
    ...     '''
    >>> print(A.__doc__)
    Example.
    <BLANKLINE>
        Parameters
        ----------
        x : int
            The value.
    <BLANKLINE>
    """

    def __init__(self, **sections):
        self.sections = sections

    def __call__(self, obj):
        doc = obj.__doc__
        if doc is None:
            raise ValueError(f"{obj.__qualname__} has no docstring to substitute into.")
        missing = [name for name in self.sections if not self._pattern(name).search(doc)]
        if missing:
            raise ValueError(f"The docstring of {obj.__qualname__} lacks placeholders {missing}.")
        for name, text in self.sections.items():
            section = textwrap.dedent(text).strip("\n")
            doc = self._pattern(name).sub(
                lambda match, section=section: textwrap.indent(section, match.group(1)), doc
            )
        obj.__doc__ = doc
        return obj

    @staticmethod
    def _pattern(name):
        return re.compile(rf"^([ \t]*)\{{{re.escape(name)}\}}[ \t]*$", re.MULTILINE)


_DEPTH_LAYERS = """\
        Number of layers counted from input to output, at least 2: the first
        layer, ``depth - 2`` hidden ``Linear + ReLU`` layers, the output layer.
        ``"auto"`` chooses 2 or 3 on the validation part under
        ``recipe="sknd"``: for a classifier with at least 100 training rows,
        first a wide depth-3 network (100 hidden units, or ``hidden_units``)
        whose head is trained as scikit-learn trains its MLP, on the tuned
        depth-2 model's indices, kept where its validation losses beat that
        model's by more than their standard error; otherwise a depth-3
        network that starts at the tuned depth-2 model, kept only when a
        later epoch beats it on validation; otherwise the depth-2 model is
        trained (one more training run), as with ``depth=2``. Depth 2 where
        there is nothing to choose on (no validation part, fewer than 10
        validation rows, ``partial_fit``, user ``callbacks``, which follow
        one training run), for
        ``recipe="paper"`` (the paper's depth-2 model) and the MLP, which
        ``verbose`` reports. ``depth_`` holds the depth fitted.
"""
_DEPTH_DOC = (
    """\
    depth : int or "auto", default="auto"
"""
    + _DEPTH_LAYERS
)
_TRANSFORMER_DEPTH_DOC = (
    """\
    depth : int or "auto", default=2
"""
    + _DEPTH_LAYERS
)

ARCHITECTURE_DOC = """\
    architecture : {"nd", "attnd", "mlp"}, default="nd"
        ``"nd"``: Normalized Difference layer first; ``"attnd"``: ND outputs
        gated by ``sigmoid(W b + c)``; ``"mlp"``: the paper's baseline with a
        ``Linear + ReLU`` first layer.
"""

# NDTransformer learns indices: the MLP baseline has none, so its constraints reject it.
TRANSFORMER_ARCHITECTURE_DOC = """\
    architecture : {"nd", "attnd"}, default="nd"
        ``"nd"``: Normalized Difference layer first; ``"attnd"``: ND outputs
        gated by ``sigmoid(W b + c)``.
"""

_OTHER_PARAMETERS_DOC = """\
    hidden_units : int, default=None
        Width of the hidden layers (and of the MLP's first layer). ``None``
        uses the number of band pairs as in the paper, clipped to [8, 256] so
        that few bands still give a usable layer and many bands do not build
        huge dense layers; under ``recipe="sknd"`` at depth 3 or more, the
        widest layer that keeps depth 3 within the parameter count of
        scikit-learn's default MLP on the same bands (at least
        ``2 n_outputs + 8``); ``depth="auto"``'s wide head has 100. Under
        ``recipe="sknd"`` deeper networks need at least ``2 n_outputs``
        hidden units (see ``recipe``).
    epsilon : float, default=1e-6
        Positive stabilising constant of the ND denominator, in
        ``[1e-15, 1e15]`` (smaller values vanish in float32).
    variant : {"auto", "reflectance", "signed", "softplus"}, default="auto"
        ``"reflectance"`` requires non-negative inputs (and says so in its
        tags); ``"signed"`` uses ``sqrt(b**2 + epsilon)`` in the denominator
        and ``"softplus"`` applies softplus to the inputs, both for signed data.
        ``"auto"`` chooses at fit (``variant_``): ``"reflectance"`` when every
        training value is non-negative, else ``"signed"``; negative values
        that look like no-data fill values (-9999, -32768, one negative value
        in every band of a row) raise a ``ValueError`` instead.
    pairs : "auto", "all", int or array-like of shape (n_pairs, 2), default="auto"
        Band pairs of the ND layer: every pair ``i < j``, explicit ``(i, j)``
        pairs of band indices or band names, e.g. ``[("B8", "B4"), ("B8", "B11")]``
        (names as in ``bands`` or the DataFrame columns; under a ``sensor`` also
        its spellings and common names such as ``("nir", "red")``), or pairs
        screened before training. An integer ``m`` keeps the ``m`` pairs whose
        classic index ``(b_i - b_j) / (b_i + b_j)`` best explains the target on
        the training data (squared correlation for regression, correlation
        ratio for classification), in their ``i < j`` order. ``"auto"`` keeps
        every pair below 50 bands and, from 50 bands, the best pairs up to a
        budget: at most 1,024, and few enough that a depth-2 ND model has at
        most 30 % of the parameters of the MLP of the same depth (e.g. 709
        pairs of 4,950 at 100 bands and 10 classes). Screening makes
        hyperspectral data (hundreds of bands, tens of thousands of pairs)
        compact and cheaper to fit; ``"all"`` keeps every pair.
    lr : float, default=0.01
        Adam learning rate.
    weight_decay : float, default=1e-4
        Adam weight decay (L2 penalty).
    batch_size : int, default=32
        Mini-batch size.
    max_epochs : int, default=150
        Maximum number of passes over the training data.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training data (or use
        ``X_val``/``y_val`` passed to ``fit``), stop after ``patience`` epochs
        without improvement of the validation score and restore the weights of
        the best epoch.
    patience : int, default=25
        Epochs without improvement before early stopping.
    validation_fraction : float, default=0.2
        Share of the training data held out for early stopping (stratified for
        classification), as in the paper's 70/20/10 protocol.
    device : str or torch.device, default="cpu"
        Where to train: any device PyTorch accepts (``"cpu"``, ``"cuda"``,
        ``"cuda:1"``, ``"mps"``, a ``torch.device``), checked at fit; ``"auto"``
        picks a CUDA GPU when PyTorch sees one.
    random_state : int, RandomState instance or None, default=None
        Seeds weight initialisation, shuffling and the validation split. Fits
        with the same integer give bit-identical models on the same machine;
        the global torch random state is never touched.
    verbose : int, default=0
        Print a per-epoch log when positive.
    bands : array-like of str, default=None
        Band names, one per column of ``X``. By default the DataFrame column
        names seen in ``fit``, else ``x0, x1, ...``; ``bands`` wins over column
        names. They label ``indices_``, ``export_formulas`` and the feature
        names, and may be used in ``pairs``.
    sensor : str, default=None
        Sensor preset of :mod:`sknd.bands` (``"sentinel2"``, ``"landsat8"``,
        ``"landsat7"``, ``"landsat5"``, ``"hls_s30"``, ``"hls_l30"``,
        ``"planetscope"``, ``"aster"``, ``"landsat_mss"``,
        ``"landsat_mss_1_3"``, ``"modis"``) mapping the band names to common
        names, so that ``indices_`` can name the classic index each pair forms
        and :mod:`sknd.raster` can find the bands in another sensor's scene.
        Band names the sensor lacks raise a ``ValueError``.
    passthrough : bool, default=False
        Also feed the raw bands, standardized with the mean and standard
        deviation of the training data (stored in the network), to the dense
        layers beside the ND outputs. Normalized differences discard overall
        brightness, which some tasks need; the raw branch brings it back but
        is not illumination-invariant, while the ND branch stays so.
    recipe : {"sknd", "paper"}, default="sknd"
        Training recipe. ``"paper"``: the paper's (Adam from the initial
        weights, early stopping on the validation score). ``"sknd"`` adds,
        for ND and AttND networks: a fixed standardization of the
        first block's outputs (the classic indices' mean and standard
        deviation on the training data, kept as buffers: parameter counts
        and illumination invariance do not change); an output layer started
        from the logistic (ridge, for regression) fit on the standardized
        classic indices, its penalty chosen from the data
        (``start_regularization_``); band weights and output layer then
        refined jointly by L-BFGS under a prior toward the classic indices
        whose strength the validation part chooses; early stopping that
        scores the selected model as epoch 0 (``best_epoch_ = 0`` when Adam
        never beat it); and a final convex refit of the output layer on the
        learned indices of the training and validation rows. A classifier's
        convex fits and refinement also train on two noisy copies of the
        rows under the paper's noise (``b + train_noise |b| z``): robustness
        to noisy bands. A deeper
        network starts exactly at that depth-2 model: its first ``2
        n_outputs`` hidden units carry the linear output ``s`` as ``ReLU(s)``
        and ``ReLU(-s)``, the others start random with zero output weights,
        so training adds only the nonlinear part validation confirms; its
        output layer is refitted on the last hidden layer.
        ``learning_gain_`` says what learning gained on the validation
        part. The MLP trains the same under both; see the user guide's
        training page. With 10 bands and two classes an ND network has
        136 / 1,172 / 1,724 parameters at depth 2 / 3 / 4 under ``"sknd"`` and
        136 / 2,206 / 4,276 under ``"paper"`` (one hidden unit per band pair);
        the convex path and the refinement make a default fit cost several
        paper-recipe fits.
    warm_start : bool, default=False
        When ``True``, ``fit`` continues training the fitted network (weights,
        band pairs, the recipe's conditioning and target scaling) instead of
        building a new one, with a new optimizer and the usual validation
        split and early stopping; the default recipe still refits the output
        layer at the end. The parameters the network is made of
        (``architecture``, ``depth``, ``hidden_units``, ``epsilon``,
        ``variant``, ``pairs``, ``bands``, ``sensor``, ``passthrough``,
        ``recipe``) must be unchanged, and ``y`` may only hold classes of the
        first fit; others (``lr``, ``max_epochs`` ...) may change.
        ``partial_fit`` always continues.
    callbacks : list of (str, skorch.callbacks.Callback), default=None
        skorch callbacks run by ``fit`` and ``partial_fit``, e.g.
        ``[("lr", LRScheduler("StepLR", step_size=30)), ("progress",
        ProgressBar())]``; stored as given, each fit runs copies (the fitted
        ones are ``net_.callbacks_``). They follow sknd's own (finite
        training, ``valid_score``) and precede its early stopping, and see
        every epoch. Callbacks with epoch-level events keep the fast training
        step; one that implements a batch-level event for training batches
        (``ProgressBar``, a per-batch ``LRScheduler``, ``on_grad_computed``)
        makes the whole fit use skorch's autograd step, which sends every
        event. What each path sends, and the callbacks refused, are listed
        on the user guide's training page.
"""

#: A parameter of NDClassifier and NDTransformer (before TRAIN_NOISE_DOC's).
CLASS_WEIGHT_DOC = """\
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as in scikit-learn: ``{label: weight}``, or
        ``"balanced"`` for ``n_samples / (n_classes * np.bincount(y))`` (each
        class weighs the same in total). Multiplied with ``sample_weight`` in
        ``fit``. None: all classes weigh 1. Only for class labels: a
        continuous target with ``class_weight`` raises a ``ValueError``.
"""

#: The last parameter of NDClassifier and NDTransformer.
TRAIN_NOISE_DOC = """\
    train_noise : float or "auto", default="auto"
        Under ``recipe="sknd"`` and for class labels, the convex start, the
        refinement and the final refit also train on two noisy copies of the
        training rows, ``b + train_noise * |b| * z`` per band value (``z``
        standard normal, seeded draws; the paper's noise model), each a third
        of the weight, and ``depth="auto"``'s wide head on such copies every
        second epoch: robustness to noisy bands, for some clean accuracy.
        ``"auto"``: 0.1, the paper's level, or 0.05 with
        ``passthrough=True``, whose network also reads the standardized bands:
        at half the level it scores higher on clean data on forest type,
        satimage's centre pixel and its 36 features, its drops under the noise
        still below those of an MLP on the bands (benchmarks/RESULTS.md,
        "``train_noise="auto"``: half the paper's level with passthrough").
        ``0``: the rows alone, the most accurate on clean data, but under the
        paper's noise at 10 % its accuracy drops further than the default's on
        each of those data sets (benchmarks/RESULTS.md, "Newton steps for the
        chosen ``C``, a shorter refinement", which gives both).
        Illumination invariance holds either way: the noise scales with the
        bands.
"""

#: ``sample_weight``, ``X_val``, ``y_val`` and ``groups`` of every estimator's ``fit``.
FIT_OPTIONS_DOC = """\
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each sample: weight ``k`` counts as ``k``
        copies of the sample in the training loss (the batch mean of
        ``w_i * loss_i``, weights rescaled to mean 1), the validation score
        and loss of the internal split, the pair screening and the default
        recipe's statistics and convex fits. An explicit ``X_val`` is not
        weighted. Routed by metadata routing after
        ``set_fit_request(sample_weight=True)``.
    X_val, y_val : array-like, default=None
        Explicit validation set for early stopping, used instead of the
        internal ``validation_fraction`` split. Keyword only, as in
        scikit-learn's ``HistGradientBoostingClassifier.fit``.
    groups : array-like of shape (n_samples,), default=None
        Group labels (fields, plots, spatial blocks). With early stopping and
        no ``X_val``, the internal validation split holds out whole groups
        (:class:`~sklearn.model_selection.GroupShuffleSplit`), so correlated
        samples never sit on both sides. Routed by scikit-learn's metadata
        routing after ``set_fit_request(groups=True)``.
"""

#: The parameters of NDClassifier and NDRegressor, in the order of their signature.
PARAMETERS_DOC = _DEPTH_DOC + ARCHITECTURE_DOC + _OTHER_PARAMETERS_DOC
#: The same for NDTransformer (after its own ``n_indices``).
TRANSFORMER_PARAMETERS_DOC = (
    _TRANSFORMER_DEPTH_DOC + TRANSFORMER_ARCHITECTURE_DOC + _OTHER_PARAMETERS_DOC
)

ATTRIBUTES_DOC = """\
    n_features_in_ : int
        Number of bands seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Band names, when ``X`` was a DataFrame with string column names.
    pairs_ : ndarray of shape (n_pairs, 2)
        Band index pairs ``(i, j)`` of the ND layer (empty for the MLP).
    coef_a_, coef_c_ : ndarray of shape (n_pairs,)
        Learned raw parameters; band ``i`` is weighted by ``softplus(a)`` and
        band ``j`` by ``softplus(c)`` (empty for the MLP).
    index_importances_ : ndarray of shape (n_pairs,)
        Norm of each index's outgoing weights times its standard deviation on
        the training data (empty for the MLP).
    n_parameters_ : int
        Number of trainable parameters of the network.
    n_outputs_ : int
        Number of output units.
    history_ : pandas.DataFrame
        One row per epoch: ``epoch``, ``train_loss``, ``valid_loss`` and
        ``valid_score`` (NaN without a validation set), then a column per
        number the ``callbacks`` record (e.g. ``event_lr``). ``fit`` (also with
        ``warm_start``) starts a new history, each ``partial_fit`` call appends
        its epoch.
    loss_curve_ : list of float
        Training loss per epoch.
    validation_scores_ : list of float
        Validation score per epoch.
    best_validation_score_ : float or None
        Validation score of the restored epoch.
    best_epoch_ : int or None
        1-based epoch whose weights were restored by early stopping; 0 when
        the starting model (``recipe="sknd"``) was never beaten.
    depth_ : int
        The depth of the fitted network: ``depth``, or the one ``depth="auto"``
        chose (2 or 3).
    learning_gain_ : float or None
        Under ``recipe="sknd"``: the validation score (accuracy, or R^2) of
        the trained model minus that of the tuned fixed-index depth-2 start
        (under ``warm_start``: of the model it continued), before the final
        refit; 0.0 when learning the indices (and, deeper, the hidden
        layers) gained nothing on the validation part. None without a
        validation part (``early_stopping=False`` and no ``X_val``;
        ``partial_fit``), for the MLP and ``recipe="paper"``.
    start_regularization_ : float or None
        Penalty of the recipe's convex start and refit: ``C`` of the
        logistic regression (classification) or ``alpha`` of the ridge
        regression on standardized targets (regression). Chosen from the
        data (the validation log-loss over ``C``; generalized
        cross-validation over ``alpha``), each by the one-standard-error
        rule; 1.0 when there are fewer than 10 rows to choose on. None
        where the recipe does not apply (as for ``learning_gain_``).
    n_iter_ : int
        Number of epochs in ``history_``.
    band_names_ : ndarray of shape (n_features_in_,)
        Band names used for ``indices_``, ``export_formulas`` and feature
        names (see ``bands``).
    bands_ : tuple of sknd.bands.Band
        The bands resolved at fit time: their names and, under a ``sensor``,
        common names and wavelengths. Later changes of ``bands`` or
        ``sensor`` do not relabel a fitted model.
    band_range_ : ndarray of shape (n_features_in_, 2)
        Smallest and largest value of each band in the data fitted on (all
        ``partial_fit`` parts and warm starts). A network that sees raw band
        values (``passthrough=True``, ``architecture="mlp"``) warns when it
        predicts on values more than 10 times a band's largest magnitude
        here, naming the bands and the factor (other units, e.g. digital
        numbers for a model of reflectance); ND layers alone do not change
        when all bands are scaled by one factor.
    epsilon_ : float
        ``epsilon`` as the network was fitted with; ``transform``,
        ``export_formulas`` and :mod:`sknd.raster` use it, so that
        ``set_params`` without a refit cannot change a fitted model.
    variant_ : str
        ``variant`` as the network was fitted with, ``"auto"`` resolved to
        ``"reflectance"`` or ``"signed"`` (it decides, e.g., whether negative
        band values are refused).
    indices_ : pandas.DataFrame
        One row per learned index, in the order of ``pairs_`` (for
        ``NDTransformer``: of the columns of ``transform``), see
        :func:`sknd.inspection.index_table`:
        ``band_i``, ``band_j``, raw parameters ``a`` and ``c``, the weighting
        ``k = softplus(a) / softplus(c)`` of ``band_i`` relative to ``band_j``,
        ``importance`` (``index_importances_``) and ``known_index``, the
        classic index the pair forms (``"-NDVI"`` for a reversed pair, ``""``
        if none; ``""`` for every pair when the bands were signed at fit,
        e.g. standardized, which ``indices_.attrs["note"]`` says). Empty for
        the MLP.
    passthrough_importances_ : ndarray of shape (n_features_in_,) or (0,)
        With ``passthrough=True``, the importance of each standardized raw
        band, measured like ``index_importances_``; empty otherwise.
    net_ : skorch.NeuralNet
        The skorch net of the last ``fit`` or ``partial_fit`` call, without
        its data: ``net_.history`` (every key the callbacks recorded, e.g.
        ``event_lr``), ``net_.callbacks_`` (the fitted copies of
        ``callbacks``), ``net_.optimizer_``; ``net_.predict``,
        ``predict_proba`` and ``score`` as the estimator's. A view of the
        fitted model: its ``fit``, ``partial_fit``, ``initialize`` and
        ``load_params`` raise a ``RuntimeError`` (train the estimator, or
        fine-tune ``to_torch()``).
    module_ : torch.nn.Module
        The fitted network (``net_.module_``), which ``predict`` runs; see
        ``to_torch()`` for a copy to change or fine-tune.
"""

NOTES_DOC = """\
    ``X`` holds one row per sample (pixel) and one column per band: a numpy
    array, a DataFrame or a sparse matrix (made dense, up to 50 million
    values). float32 and float64 are used as given; float16, integer (e.g.
    digital numbers) and boolean bands are converted to float64. The network
    trains in float32 whatever the input, and predicts in float64 from its
    float32 weights, so that a sample's prediction does not depend on the
    other rows passed with it; half-precision training is not supported.
    Band values must be finite and within ``[-1e15, 1e15]``, and
    non-negative for ``variant="reflectance"``: NaN, infinite, fill and
    negative values raise a ``ValueError`` that says where they are and how to
    fix them. Training rows whose bands are all 0 (a common no-data value)
    raise a ``UserWarning``.

    ``fit`` and ``partial_fit`` are all or nothing: if they raise (invalid
    data, a ``KeyboardInterrupt``, or a training divergence, reported with its
    epoch), the estimator is left as it was before the call: unfitted, or
    with its previous model.

    ``partial_fit`` runs one epoch of Adam over the given data per call,
    without validation split or early stopping (as scikit-learn's
    ``MLPClassifier.partial_fit``); the optimizer's state carries over from
    call to call, and ``fit`` (without ``warm_start``) starts afresh. The
    first call builds the network from its data: pair screening
    (``pairs="auto"`` from 50 bands), the default recipe's standardization
    and convex start of the output layer, and the target scaling of a
    regressor come from that first part, so it should be a representative
    sample (shuffle a stream before cutting it into parts). The band weights
    train in every call; there is no final convex refit. Sample weights
    count relative to the other samples of the same call.

    Pickles hold a CPU copy of the network and the sknd version (loading
    under another version warns): a model trained with ``device="cuda"``
    loads and predicts on a machine without a GPU.
"""
