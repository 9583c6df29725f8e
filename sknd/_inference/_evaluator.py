"""Fast evaluation of fitted sknd networks on pixel tables: numpy, and numba where installed.

The estimators predict through their torch network, written for training: it
gathers the two bands of every pair and runs several small kernels per pair.
Applied to millions of pixels (:mod:`sknd.raster`), the same function is
cheaper as a compiled kernel (:mod:`sknd._nd._kernels`, with numba) or, in numpy,
as dense linear algebra. :class:`FastNetwork` is built from the layer records
of :func:`sknd.networks.describe`, one numpy step per layer kind
(:data:`_STEPS`); the ND step follows :mod:`sknd._nd._formula`.
tests/nd/test_networks.py checks every architecture, variant and task against the
torch forward pass.
"""

import copy
import functools
import math
import threading

import numpy as np

from .._data._validation import check_band_values
from .._nd._formula import NUMPY_GEMM_MAX_BANDS, smooth_abs, softplus
from .._threads import single_threaded_blas

__all__ = []


# Dense layers up to this many outputs are computed one output at a time.
_BY_OUTPUT_MAX_WIDTH = 4
# Rows per pass through the network: intermediates of a few MB stay in cache.
_MAX_BLOCK_ROWS = 8192
# The same with the compiled kernels, whose fused ND + dense step keeps only its outputs:
# larger blocks spare per-block calls, a visible share of a small model's time per pixel
# (benchmarks/RESULTS.md, "The raster kernel against bd5a18d" and "Figures moved out of
# the code").
_MAX_COMPILED_BLOCK_ROWS = 65536
_MIN_BLOCK_ROWS = 256
_BLOCK_BYTES = 4 * 2**20


class _Workspace(threading.local):
    """Per-thread scratch arrays reused across calls, and the kernels the call uses.

    Fresh multi-megabyte arrays cost a page fault per 4 kB page on every call;
    on the virtual machines this was measured on, that made the GEMMs of a
    block several times slower than writing into a reused buffer
    (benchmarks/RESULTS.md, "Figures moved out of the code").
    """

    def __init__(self):
        self.buffers = {}
        # The compiled kernels of the call in progress, or None for numpy (FastNetwork.compiled).
        self.kernels = None
        # The dtype the call in progress computes in. Blocks come in it, except to a first
        # step that reads the pixel table's own dtype (reads_raw).
        self.dtype = None

    def get(self, key, shape, dtype):
        size = math.prod(shape)  # np.prod costs microseconds, paid on every block
        buffer = self.buffers.get(key)
        if buffer is None or buffer.size < size or buffer.dtype != dtype:
            buffer = np.empty(max(size, 1), dtype=dtype)
            self.buffers[key] = buffer
        return buffer[:size].reshape(shape)


class FastNetwork:
    """Evaluation of a fitted sknd network on pixel tables.

    For the ``n_pairs`` pairs ``(i, j)`` with band weights ``wa = softplus(a)``,
    ``wc = softplus(c)``, the ND layer is (see :mod:`sknd._nd._formula`)::

        numerator   = X @ Wn,  Wn[i, p] = +wa[p],  Wn[j, p] = -wc[p]
        denominator = R @ Wd,  Wd[i, p] = +wa[p],  Wd[j, p] = +wc[p]
        N = numerator / (denominator + epsilon)

    with ``R = X`` (``"reflectance"``), ``sqrt(X**2 + epsilon)`` (``"signed"``)
    and ``X = R = softplus(X)`` (``"softplus"``): two GEMMs with an inner
    dimension of ``n_bands`` (gathered columns above
    :data:`~sknd._nd._formula.NUMPY_GEMM_MAX_BANDS` bands), or the compiled kernel.
    Then come the dense layers as GEMMs (a narrow layer right after the ND
    layer is accumulated by the compiled kernel) and the estimator's own
    decoding of the network output (labels, probabilities, rescaled
    regression targets). Rows go through the network in blocks of a few
    thousand, in per-thread buffers. Everything runs in the table's float
    dtype: float32 tables in float32 (as the network was trained; the compiled
    ND layer about twice as fast as in float64, within the bound of
    docs/raster.md), float64 and integer tables in float64 from the float32
    weights. A compiled first layer reads the table in its own dtype
    (:data:`sknd._nd._kernels.INPUT_DTYPES`) and converts it tile by tile, to the
    same values as a cast of the whole table. On the CPU the estimators' own
    ``predict``, ``predict_proba`` and ``transform`` run through this
    evaluator too, so that an estimator, a scene (:mod:`sknd.raster`) and a
    model file (:mod:`sknd._model_file`) give the same values bit for bit.

    Built by :meth:`for_network`, :meth:`for_layers` or :meth:`for_indices`;
    the input checks are those of the estimator's own validation.
    """

    # Chunks run in parallel threads: BLAS must stay single-threaded inside them.
    single_threaded_blas = True
    #: Whether the compiled kernels run (when numba is installed). False runs numpy only,
    #: which spares numba's start-up (its import and kernel loading: more time and memory
    #: than a few pixels take, benchmarks/RESULTS.md, "The scene command") to a process
    #: that evaluates a few pixels; values then differ from the kernels' in the last bits.
    compiled = True

    def __init__(
        self,
        steps,
        finish,
        *,
        non_negative,
        estimator_name,
        feature_names,
        band_range=None,
    ):
        self.steps = steps
        self.finish = finish
        self.non_negative = non_negative
        self.estimator_name = estimator_name
        self.feature_names = feature_names
        self.band_range = band_range
        width = max([step.width for step in steps] + [1])
        self.block_rows = _block_rows(width, _MAX_BLOCK_ROWS)
        width = max([getattr(step, "compiled_width", step.width) for step in steps] + [1])
        self.compiled_block_rows = _block_rows(width, _MAX_COMPILED_BLOCK_ROWS)
        self._workspace = _Workspace()

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_workspace"]  # thread-local scratch: rebuilt where unpickled
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._workspace = _Workspace()

    def numpy_only(self):
        """A copy that runs without the compiled kernels (see :attr:`compiled`)."""
        network = copy.copy(self)  # through __getstate__: a workspace of its own
        network.compiled = False
        return network

    @classmethod
    def for_network(cls, records, n_features, finish, **checks):
        """The whole network (records of :func:`sknd.networks.describe`), then ``finish``.

        ``finish`` is None or returns a new array (labels, probabilities, targets).
        Raises ``NotImplementedError`` for a layer kind without a numpy step.
        """
        return cls.for_layers(network_layers(records), n_features, finish, **checks)

    @classmethod
    def for_layers(cls, layers, n_features, finish, **checks):
        """The network of :func:`network_layers` (or of a model file), then ``finish``."""
        steps = []
        for layer in layers:
            if layer["kind"] == "linear" and steps and isinstance(steps[-1], _StandardizeStep):
                # One dense layer, so that an ND layer followed by a narrow output layer
                # still runs as one compiled kernel (_NDDenseStep).
                steps[-1] = _LinearStep(*steps[-1].fold_into(layer["weight"], layer["bias"]))
            else:
                steps.append(_step(layer, n_features))
        return cls(_fuse(steps), finish, **checks)

    @classmethod
    def for_indices(cls, pairs, a, c, n_features, epsilon, variant, **checks):
        """ND outputs of ``pairs`` with raw parameters ``a``, ``c``, in the input's dtype."""
        wa, wc = (
            softplus(np.asarray(a, dtype=np.float64)),
            softplus(np.asarray(c, dtype=np.float64)),
        )
        step = _NDStep(np.asarray(pairs), wa, wc, n_features, float(epsilon), variant)
        return cls([step], None, **checks)

    def __call__(self, X, *, checked=False):
        """Outputs for the pixel table ``X`` (``checked``: validated by the estimator)."""
        X = np.asarray(X)
        source_dtype = X.dtype
        # The dtype computed in: float32 or float64 as the table's, float64 for other types.
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        workspace = self._workspace
        workspace.kernels = kernels = _compiled_kernels() if self.compiled else None
        workspace.dtype = dtype
        block_dtype = dtype
        if (
            kernels is not None
            and getattr(self.steps[0] if self.steps else None, "reads_raw", False)
            and X.dtype in kernels.INPUT_DTYPES
        ):
            # The compiled kernel converts the table tile by tile in cache, to the same
            # values: cast here, the table would be written out in float64 and read back.
            block_dtype = None
        if not checked:
            X = np.ascontiguousarray(X, dtype=block_dtype)
            self._check(X, source_dtype)
        result = None
        rows = self.block_rows if kernels is None else self.compiled_block_rows
        # Blocks of a few thousand rows gain nothing from BLAS threads, and on busy cores
        # lose several-fold (benchmarks/RESULTS.md, "Figures moved out of the code").
        # Reference-counted: cheap
        # inside sknd.raster's chunks, which hold the limit already.
        with single_threaded_blas():
            for start in range(0, max(len(X), 1), rows):
                # Cast block by block, if at all (a whole table in float64 would leave the caches).
                block = np.ascontiguousarray(X[start : start + rows], dtype=block_dtype)
                values = block
                for step in self.steps:
                    values = step(values, block, workspace)
                if self.finish is not None:
                    values = self.finish(values)
                    if len(block) == len(X):  # one block: the decoded outputs are a new array
                        return values
                if result is None:  # dtype and width are known after the first block
                    result = np.empty((len(X),) + values.shape[1:], dtype=values.dtype)
                result[start : start + len(block)] = values
        return result

    def _check(self, X, source_dtype):
        """Reject what the estimator's own validation rejects (NaN rows are masked before)."""
        try:
            check_band_values(
                X,
                name="pixels",
                estimator_name=self.estimator_name,
                feature_names=self.feature_names,
                non_negative=self.non_negative,
                source_dtype=source_dtype,
                band_range=getattr(self, "band_range", None),  # None: pickled before it existed
            )
        except ValueError as error:
            raise ValueError(
                f"{error} (Rows count the pixels of one chunk of the image.) If such a value "
                "marks no-data, pass it as nodata=... and those pixels are skipped."
            ) from None


def _block_rows(width, most):
    """Rows per block: intermediates of ``width`` float64 values per row within _BLOCK_BYTES."""
    return int(np.clip(_BLOCK_BYTES // (8 * width), _MIN_BLOCK_ROWS, most))


class _Step:
    """A network layer with float64 weights, cast on first use to the data's dtype."""

    def _cast(self, dtype):
        cache = self.__dict__.setdefault("_weights_by_dtype", {})
        if dtype not in cache:  # a race only computes the same arrays twice
            cache[dtype] = tuple(w.astype(dtype) for w in self.weights)
        return cache[dtype]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_weights_by_dtype", None)  # ship the float64 weights only
        return state


class _NDStep(_Step):
    """ND outputs of all pairs (see :class:`FastNetwork`).

    Computed by the compiled kernel of :mod:`sknd._nd._kernels` when numba is
    installed, else with numpy in GEMM or gather form.
    """

    #: As the first step, the compiled kernel takes the blocks in their own dtype.
    reads_raw = True

    def __init__(self, pairs, wa, wc, n_features, epsilon, variant):
        self.pairs = pairs
        # The bands of every pair as contiguous arrays, as the compiled kernel takes them.
        self.first_band = np.ascontiguousarray(pairs[:, 0], dtype=np.intp)
        self.second_band = np.ascontiguousarray(pairs[:, 1], dtype=np.intp)
        self.width = len(pairs)
        self.epsilon = epsilon
        self.variant = variant
        self.gemm = n_features <= NUMPY_GEMM_MAX_BANDS
        matrices = ()
        if self.gemm:
            columns = np.arange(len(pairs))
            first = np.zeros((n_features, len(pairs)))
            second = np.zeros((n_features, len(pairs)))
            first[pairs[:, 0], columns] = wa
            first[pairs[:, 1], columns] = -wc
            second[pairs[:, 0], columns] = wa
            second[pairs[:, 1], columns] = wc
            matrices = (first, second)
        self.weights = (wa, wc) + matrices

    def __call__(self, X, inputs, workspace):
        kernels = workspace.kernels
        if kernels is not None:
            dtype = workspace.dtype
            out = workspace.get((id(self), "t"), (self.width, len(X)), dtype)
            kernels.normalized_differences(X, *self.kernel_arguments(dtype), out)
            return out.T
        return self._numpy(X, workspace)

    def kernel_arguments(self, dtype):
        """The arguments of the compiled kernels after the pixel table."""
        wa, wc = self._cast(dtype)[:2]
        code = _compiled_kernels().VARIANT_CODES[self.variant]
        return self.first_band, self.second_band, wa, wc, dtype.type(self.epsilon), code

    def _numpy(self, X, workspace):
        n = len(X)
        key = id(self)
        dtype = X.dtype
        eps = dtype.type(self.epsilon)
        if self.variant == "softplus":
            X = softplus(X, out=workspace.get((key, "x"), X.shape, dtype))
        B = X
        if self.variant == "signed":
            B = smooth_abs(X, self.epsilon, out=workspace.get((key, "b"), X.shape, dtype))
        wa, wc, *matrices = self._cast(dtype)
        numerator = workspace.get((key, "n"), (n, self.width), dtype)
        denominator = workspace.get((key, "d"), (n, self.width), dtype)
        if self.gemm:
            np.matmul(X, matrices[0], out=numerator)
            np.matmul(B, matrices[1], out=denominator)
        else:
            i, j = self.first_band, self.second_band
            scratch = workspace.get((key, "s"), (n, self.width), dtype)
            np.take(X, i, axis=1, out=numerator)
            numerator *= wa
            np.take(X, j, axis=1, out=scratch)
            scratch *= wc
            numerator -= scratch
            np.take(B, i, axis=1, out=denominator)
            denominator *= wa
            np.take(B, j, axis=1, out=scratch)
            scratch *= wc
            denominator += scratch
        denominator += eps
        numerator /= denominator
        return numerator


@functools.cache
def _compiled_kernels():
    """:mod:`sknd._nd._kernels` when numba is installed, else None (numpy fallback)."""
    try:
        from .._nd import _kernels
    except ImportError:
        return None
    return _kernels


class _NDDenseStep:
    """An ND step and the narrow dense layer after it (the output layer of a depth-2 model).

    The compiled kernel computes both in one pass without writing the ND
    outputs to memory; without numba the two steps run one after the other.
    """

    reads_raw = True  # as _NDStep

    def __init__(self, nd, dense):
        self.nd = nd
        self.dense = dense
        self.width = max(nd.width, dense.width)
        self.compiled_width = dense.width  # the kernel keeps the ND outputs in cache

    def __call__(self, X, inputs, workspace):
        kernels = workspace.kernels
        if kernels is None:
            return self.dense(self.nd(X, inputs, workspace), inputs, workspace)
        dtype = workspace.dtype
        weight, bias = self.dense._cast(dtype)
        out = workspace.get((id(self), "y"), (self.dense.width, len(X)), dtype)
        kernels.normalized_differences_dense(X, *self.nd.kernel_arguments(dtype), weight, bias, out)
        return out.T


def _fuse(steps):
    """Merge every ND step followed by a narrow dense layer into one :class:`_NDDenseStep`."""
    fused = []
    for step in steps:
        if (
            isinstance(step, _LinearStep)
            and step.by_output
            and fused
            and type(fused[-1]) is _NDStep
        ):
            fused[-1] = _NDDenseStep(fused[-1], step)
        else:
            fused.append(step)
    return fused


class _AttentionStep:
    """AttND: ND outputs times ``sigmoid(gate(x))``, the gate reading the raw bands."""

    def __init__(self, nd, weight, bias):
        self.nd = nd
        self.gate = _LinearStep(weight, bias)
        self.width = nd.width

    def __call__(self, X, inputs, workspace):
        from scipy.special import expit

        values = self.nd(X, inputs, workspace)
        gate = self.gate(inputs, inputs, workspace)
        values *= expit(gate, out=gate)
        return values


class _LinearStep(_Step):
    """A dense layer, written to the rows of an ``(m, n)`` array; narrow ones one output at a time.

    OpenBLAS multiplies ``(n, k) @ (k, m)`` for m of 2 to 4 about as slowly as
    for m = 8, and adding the bias along rows of m values is slow too; one
    matrix-vector product and one bias addition per output cost about half as
    much. Wider layers are one product ``W @ X.T``. The step returns the
    transposed view, an ``(n, m)`` array with contiguous columns, which the
    next product and the decoding (a compiled argmax with numba, see
    :func:`sknd._data._decoding.class_labels`) read without a copy.
    """

    def __init__(self, weight, bias):
        self.width = len(weight)
        self.by_output = self.width <= _BY_OUTPUT_MAX_WIDTH
        self.weights = (weight, bias)

    def __call__(self, X, inputs, workspace):
        weight, bias = self._cast(X.dtype)
        out = workspace.get((id(self), "y"), (self.width, len(X)), X.dtype)
        if self.by_output:
            for row, weights, offset in zip(out, weight, bias):
                np.matmul(X, weights, out=row)
                row += offset
        else:
            np.matmul(weight, X.T, out=out)
            out += bias[:, None]
        return out.T


class _PassthroughStep(_Step):
    """The first block's outputs followed by the standardized raw bands."""

    def __init__(self, first, mean, scale):
        self.first = first
        self.weights = (mean, scale)
        self.width = max(step.width for step in first) + len(mean)

    def __call__(self, X, inputs, workspace):
        values = X
        for step in self.first:
            values = step(values, inputs, workspace)
        n_first = values.shape[1]
        out = workspace.get((id(self), "y"), (len(X), n_first + X.shape[1]), X.dtype)
        out[:, :n_first] = values
        mean, scale = self._cast(X.dtype)
        raw = np.subtract(X, mean, out=out[:, n_first:])
        raw /= scale
        return out


class _StandardizeStep(_Step):
    """``(x - mean) / scale`` (a ``Standardize`` layer not followed by a dense layer)."""

    width = 0

    def __init__(self, mean, scale):
        self.weights = (mean, scale)

    def fold_into(self, weight, bias):
        """Weights of the dense layer after this one applied to the unstandardized input.

        ``W ((x - m) / s) + b = (W / s) x + (b - W (m / s))``, in float64.
        """
        mean, scale = self.weights
        return weight / scale, bias - weight @ (mean / scale)

    def __call__(self, X, inputs, workspace):
        mean, scale = self._cast(X.dtype)
        out = np.subtract(X, mean, out=workspace.get((id(self), "y"), X.shape, X.dtype))
        out /= scale
        return out


class _ReLUStep:
    width = 0

    def __call__(self, X, inputs, workspace):
        return np.maximum(X, 0, out=X)


# ------------------------------------------------------------- network layers
# A fitted network as plain data: one dict per layer of sknd.networks.describe, its
# weights float64 numpy arrays (exact copies of the float32 parameters), its settings
# Python scalars. The evaluator is built from these dicts, and sknd._model_file stores
# them, so that a network read from a file evaluates exactly as the estimator's.


def _to_numpy(tensor):
    return tensor.detach().cpu().double().numpy()


def _nd_layer(layer):
    return {
        "kind": "nd",
        "pairs": layer.pairs.cpu().numpy().astype(np.int64),
        "a": _to_numpy(layer.a),
        "c": _to_numpy(layer.c),
        "epsilon": float(layer.epsilon),
        "variant": str(layer.variant),
    }


def _linear_layer(linear):
    weight = _to_numpy(linear.weight)
    bias = np.zeros(len(weight)) if linear.bias is None else _to_numpy(linear.bias)
    return {"weight": weight, "bias": bias}


def _statistics(module):
    return {"mean": _to_numpy(module.mean).ravel(), "scale": _to_numpy(module.scale).ravel()}


#: The plain-data layer of each layer kind of sknd.networks.describe.
_LAYERS = {
    "nd": lambda record: _nd_layer(record.module),
    "attnd": lambda record: {
        "kind": "attnd",
        "nd": _nd_layer(record.module.nd),
        **_linear_layer(record.module.gate),
    },
    "passthrough": lambda record: {
        "kind": "passthrough",
        "inner": network_layers(record.inner),
        **_statistics(record.module),
    },
    "standardize": lambda record: {"kind": "standardize", **_statistics(record.module)},
    "linear": lambda record: {"kind": "linear", **_linear_layer(record.module)},
    "relu": lambda record: {"kind": "relu"},
}


def network_layers(records):
    """The layers of :func:`sknd.networks.describe` as plain data (see above).

    Raises ``NotImplementedError`` for a layer kind without a numpy step.
    """
    layers = []
    for record in records:
        convert = _LAYERS.get(record.kind)
        if convert is None:
            raise NotImplementedError(
                f"sknd._inference._evaluator has no numpy step for {record.kind!r} layers."
            )
        layers.append(convert(record))
    return layers


def _nd_step(layer, n_features):
    wa, wc = softplus(layer["a"]), softplus(layer["c"])
    return _NDStep(layer["pairs"], wa, wc, n_features, layer["epsilon"], layer["variant"])


#: The numpy step of each layer kind (as :func:`network_layers` writes the layers).
_STEPS = {
    "nd": _nd_step,
    "attnd": lambda layer, n_features: _AttentionStep(
        _nd_step(layer["nd"], n_features), layer["weight"], layer["bias"]
    ),
    "passthrough": lambda layer, n_features: _PassthroughStep(
        [_step(inner, n_features) for inner in layer["inner"]], layer["mean"], layer["scale"]
    ),
    "standardize": lambda layer, n_features: _StandardizeStep(layer["mean"], layer["scale"]),
    "linear": lambda layer, n_features: _LinearStep(layer["weight"], layer["bias"]),
    "relu": lambda layer, n_features: _ReLUStep(),
}


def _step(layer, n_features):
    return _STEPS[layer["kind"]](layer, n_features)
