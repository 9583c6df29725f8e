"""Band pairs: how the ``pairs`` settings become the ``(i, j)`` column indices of a network.

The one home of pair resolution; the layer, the band vocabulary, the screening and the
estimators delegate here:

- by index: :func:`resolve_pairs` validates ``(i, j)`` band indices, ``"all"`` is
  :func:`all_pairs` (public as :func:`sknd.nn.resolve_pairs` and :func:`sknd.nn.all_pairs`);
- by name: :func:`band_pair_indices` finds named bands among resolved bands first
  (public as :func:`sknd.bands.band_pair_indices`);
- ``"auto"`` and a count: the estimators start from all pairs and keep the best-screened
  ones (:func:`n_pairs_to_keep`, :func:`auto_pair_budget`; the scores are
  :mod:`sknd._nd._screening`'s);
- :func:`estimator_pairs` does all of it for a new network of an estimator.
"""

import itertools
from numbers import Integral

import numpy as np

from .._sensors import SENSORS
from ._screening import screen_pairs

__all__ = []

#: ``pairs="auto"`` (the default) keeps every pair of fewer bands than this...
AUTO_ALL_PAIRS_BELOW = 50
#: ... and from there the best ones, at most this many (hundreds of bands stay fast) ...
MAX_AUTO_PAIRS = 1024
#: ... and so few that a depth-2 ND model has at most this share of the parameters of the
#: MLP of the same depth (the MLP's first layer grows with the bands, the ND layer with
#: their pairs: at 100 bands and 10 classes all pairs would make it 2.1 times the MLP).
AUTO_PARAMETER_SHARE = 0.3


def index_names(band_names, pairs):
    """The names of the indices of ``pairs``: ``nd_<band i>_<band j>``, an object array.

    What every ``get_feature_names_out`` of learned indices returns.

    >>> index_names(["red", "nir"], [(1, 0)])
    array(['nd_nir_red'], dtype=object)
    """
    return np.asarray([f"nd_{band_names[i]}_{band_names[j]}" for i, j in pairs], dtype=object)


def all_pairs(n_features):
    """Return every band pair ``(i, j)`` with ``i < j``.

    Parameters
    ----------
    n_features : int
        Number of input bands.

    Returns
    -------
    pairs : ndarray of shape (n_features * (n_features - 1) // 2, 2)
        Integer pairs in :func:`itertools.combinations` order.

    Examples
    --------
    >>> all_pairs(3).tolist()
    [[0, 1], [0, 2], [1, 2]]
    """
    pairs = np.array(list(itertools.combinations(range(n_features), 2)), dtype=np.int64)
    return pairs.reshape(-1, 2)


def resolve_pairs(n_features, pairs="all"):
    """Validate band pairs and return them as an integer array.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs : "all" or array-like of shape (n_pairs, 2)
        ``"all"`` for :func:`all_pairs`, or explicit ``(i, j)`` band indices
        with ``i != j``, each unordered pair at most once.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2)

    Raises
    ------
    ValueError
        If a pair is malformed, repeats a band, is out of range or duplicated.

    Examples
    --------
    >>> resolve_pairs(4, [(3, 1), (0, 2)]).tolist()
    [[3, 1], [0, 2]]
    """
    if isinstance(pairs, str):
        if pairs != "all":
            raise ValueError(f"pairs must be 'all' or a list of (i, j) band pairs, got {pairs!r}.")
        return all_pairs(n_features)
    try:
        array = np.asarray(pairs)
    except ValueError as exc:  # ragged nesting
        raise ValueError(f"pairs must be a list of (i, j) band pairs, got {pairs!r}.") from exc
    if array.ndim != 2 or array.shape[1] != 2 or len(array) == 0:
        raise ValueError(f"pairs must be a non-empty list of (i, j) band pairs, got {pairs!r}.")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"pairs must hold integer band indices, got {pairs!r}.")
    array = array.astype(np.int64)
    if array.min() < 0 or array.max() >= n_features:
        raise ValueError(
            f"pairs refer to band indices outside [0, {n_features - 1}] for {n_features} bands."
        )
    if np.any(array[:, 0] == array[:, 1]):
        raise ValueError("pairs must combine two different bands; found a pair (i, i).")
    if len(np.unique(np.sort(array, axis=1), axis=0)) < len(array):
        raise ValueError("pairs must not list the same band pair twice.")
    return array


def named_pairs(pairs):
    """Whether the pairs (a sequence of 2-sequences) name a band by a string anywhere."""
    return any(isinstance(value, str) for pair in pairs for value in pair)


def band_index(name, bands):
    """Position of the band called ``name``: exact name, then the sensor's
    spelling rules (``"B08"`` for ``"B8"``), then a unique common name."""
    names = [band.name for band in bands]
    if name in names:
        return names.index(name)
    sensors = {band.sensor for band in bands if band.sensor is not None}
    if sensors:
        preset = SENSORS[next(iter(sensors))]
        canonical = preset.canonical(name)
        if canonical is not None:
            for position, band in enumerate(bands):
                if preset.canonical(band.name) == canonical:
                    return position
    matches = [
        position
        for position, band in enumerate(bands)
        if band.common_name is not None
        and band.common_name == str(name).lower()
        and band.group is None
    ]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"Unknown band {name!r} in pairs; the bands are {names}.")


def band_pair_indices(pairs, bands):
    """Translate band pairs given by name into column indices.

    Parameters
    ----------
    pairs : "all" or sequence of (str or int, str or int)
        Band pairs; names are looked up among ``bands`` (exact name first,
        then the sensor's spellings, then a common name such as ``"nir"``
        that only one band has). Integers are kept as column indices.
    bands : sequence of Band
        The resolved bands, see :func:`resolve_bands`.

    Returns
    -------
    pairs : "all" or list of (int, int)
        ``"all"`` and non-sequences are returned unchanged for the caller's
        validation.

    Raises
    ------
    ValueError
        If a name matches no band, or a pair names one band twice.

    Examples
    --------
    >>> from sknd.bands import band_pair_indices, resolve_bands
    >>> bands = resolve_bands(["B02", "B04", "B08", "B11"], sensor="sentinel2")
    >>> band_pair_indices([("B8", "B4"), ("nir", "swir1"), (0, "B04")], bands)
    [(2, 1), (2, 3), (0, 1)]
    """
    if isinstance(pairs, str):
        return pairs
    try:
        items = [tuple(pair) for pair in pairs]
    except TypeError:
        return pairs
    if not named_pairs(items):
        return pairs
    indices = [
        tuple(value if not isinstance(value, str) else band_index(value, bands) for value in pair)
        for pair in items
    ]
    for pair, (i, j) in zip(items, indices):
        if i == j and isinstance(i, int) and 0 <= i < len(bands):
            raise ValueError(
                f"The pair {pair!r} names band {bands[i].name!r} twice: a normalized "
                "difference needs two different bands."
            )
    return indices


def auto_pair_budget(n_features, n_outputs, mlp_width):
    """How many pairs ``pairs="auto"`` keeps for ``n_features`` bands and ``n_outputs`` outputs.

    All pairs below :data:`AUTO_ALL_PAIRS_BELOW` bands (a binary depth-2 ND model is then at
    most 28 % of the MLP); above, at most :data:`MAX_AUTO_PAIRS` and few enough that the
    depth-2 ND model (``P`` pairs: ``2 P`` band weights, ``P n_outputs + n_outputs`` in the
    output layer) has at most :data:`AUTO_PARAMETER_SHARE` of the parameters of the depth-2
    MLP of width ``H = mlp_width`` (``H (n_features + 1) + H n_outputs + n_outputs``): the
    estimators pass the default width, :func:`sknd.networks.default_hidden_units` of all
    the pairs (the width belongs with the networks, which import this module).
    Keeping fewer pairs than that budget cost accuracy on the 36-feature satimage data
    (benchmarks/RESULTS.md, "Figures moved out of the code").

    >>> auto_pair_budget(10, 1, 45), auto_pair_budget(100, 1, 256), auto_pair_budget(100, 10, 256)
    (45, 1024, 709)
    """
    n_all = n_features * (n_features - 1) // 2
    if n_features < AUTO_ALL_PAIRS_BELOW:
        return n_all
    mlp = mlp_width * (n_features + 1) + mlp_width * n_outputs + n_outputs
    budget = int((AUTO_PARAMETER_SHARE * mlp - n_outputs) // (2 + n_outputs))
    return max(1, min(budget, MAX_AUTO_PAIRS, n_all))


def n_pairs_to_keep(pairs, n_all_pairs, auto=MAX_AUTO_PAIRS):
    """How many pairs screening keeps for the ``pairs`` parameter, or None (no screening).

    ``auto`` is the number ``pairs="auto"`` keeps (see :func:`auto_pair_budget`).
    """
    if isinstance(pairs, str):
        if pairs == "auto":
            return None if n_all_pairs <= auto else auto
        return None
    if isinstance(pairs, (int, np.integer)) and not isinstance(pairs, bool):
        return None if pairs >= n_all_pairs else int(pairs)
    return None


def estimator_pairs(
    pairs,
    bands,
    X,
    y,
    *,
    n_outputs,
    mlp_width,
    classification,
    variant,
    epsilon,
    sample_weight=None,
):
    """The pairs of an estimator's new network, from its ``pairs`` parameter.

    ``"all"``, ``"auto"`` and a count start from every pair of the columns of ``X``;
    explicit pairs (by index or by name among ``bands``, the estimator's ``bands_``) are
    validated. ``"auto"`` and a count then keep the pairs whose classic index best
    explains ``y`` (:func:`sknd._nd._screening.screen_pairs`), scored on ``X``, the training
    part only: the validation data stays unseen until early stopping looks at it.
    ``mlp_width`` is the default hidden width of an MLP on these columns, the size
    ``"auto"`` measures the ND model against (:func:`auto_pair_budget`).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(0.1, 0.5, (30, 4))
    >>> kept = estimator_pairs(2, None, X, X[:, 0] > X[:, 1], n_outputs=1, mlp_width=8,
    ...                        classification=True, variant="reflectance", epsilon=1e-6)
    >>> kept.shape
    (2, 2)
    """
    n_features = X.shape[1]
    if isinstance(pairs, str) or (isinstance(pairs, Integral) and not isinstance(pairs, bool)):
        resolved = all_pairs(n_features)  # "all", or all pairs to screen ("auto", a count)
    else:
        resolved = resolve_pairs(n_features, band_pair_indices(pairs, bands))
    auto = auto_pair_budget(n_features, n_outputs, mlp_width)
    n_keep = n_pairs_to_keep(pairs, len(resolved), auto=auto)
    if n_keep is None:
        return resolved
    return screen_pairs(
        X,
        y,
        resolved,
        n_keep,
        classification=classification,
        variant=variant,
        epsilon=epsilon,
        sample_weight=sample_weight,
    )
