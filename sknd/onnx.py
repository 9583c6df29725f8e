"""Export fitted estimators to ONNX, for serving without Python or torch.

:func:`to_onnx` traces the fitted network with ``torch.onnx.export`` (the
dynamo exporter; the ND layer has no custom operator, so the model holds only
standard ONNX operators) and appends what the estimator's method does to the
network's outputs, so that an ONNX runtime reproduces ``predict_proba`` /
``predict`` (:class:`~sknd.NDClassifier`), ``predict``
(:class:`~sknd.NDRegressor`) or ``transform`` (:class:`~sknd.NDTransformer`).

The exported graph does not validate its input. :func:`check_input` does it
against the metadata :func:`to_onnx` stores in the model (band names, number of
bands, variant), and :func:`run` runs a model on validated input with
onnxruntime, in blocks of rows (which keeps onnxruntime's intermediate arrays
small: faster than one call on a whole scene, benchmarks/RESULTS.md, "ONNX: checked
input, blocks of rows").

Needs the ``onnx`` extra: ``pip install -e ".[onnx]"`` in the sknd checkout (onnx and
onnxscript; onnxruntime to run the models).
"""

import contextlib
import io
import json
import logging
import os
import warnings

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted
from torch import nn

from ._data._validation import check_band_values, plain_values
from ._version import __version__
from .nn import NormalizedDifference

__all__ = ["check_input", "run", "to_onnx"]

#: Name of the model's input: float32 band values of shape (n_samples, n_features).
INPUT_NAME = "X"

#: Metadata keys :func:`check_input` needs (``model.metadata_props``).
_INPUT_METADATA = ("band_names", "n_features", "input_dtype", "variant")


class _Classifier(nn.Module):
    """Network logits to ``(class position, probabilities)``, as ``_tasks.ClassificationTask``."""

    def __init__(self, network, binary):
        super().__init__()
        self.network = network
        self.binary = binary

    def forward(self, x):
        logits = self.network(x).double()
        if self.binary:
            positive = torch.sigmoid(logits)
            return (logits[:, 0] > 0).long(), torch.cat([1 - positive, positive], 1)
        # argmax keeps the first of tied columns, as the task's decoding does.
        return logits.argmax(1), torch.softmax(logits, 1)


class _Regressor(nn.Module):
    """Network outputs on the target's scale, as ``_tasks.RegressionTask.decode``."""

    def __init__(self, network, task):
        super().__init__()
        self.network = network
        self.register_buffer("scale", torch.as_tensor(task.decode_scale, dtype=torch.float64))
        self.register_buffer("mean", torch.as_tensor(task.mean, dtype=torch.float64))
        self.flat = task.ndim == 1

    def forward(self, x):
        prediction = self.network(x).double() * self.scale + self.mean
        return prediction.reshape(-1) if self.flat else prediction


def _transformer_network(estimator):
    """The selected learned indices as one ND layer (``transform``)."""
    selected = estimator.selected_indices_
    layer = NormalizedDifference(
        estimator.n_features_in_,
        estimator.pairs_[selected],
        estimator.epsilon_,
        estimator.variant_,
    )
    with torch.no_grad():
        layer.a.copy_(torch.as_tensor(estimator.coef_a_[selected]))
        layer.c.copy_(torch.as_tensor(estimator.coef_c_[selected]))
    return layer.eval()


def _export_module(estimator):
    """``(module, output names)`` computing the estimator's methods."""
    from ._estimators._transformer import NDTransformer  # noqa: PLC0415 (avoid a cycle at import)

    if isinstance(estimator, NDTransformer):
        return _transformer_network(estimator), ["indices"]
    network, task = estimator._export_network()
    if hasattr(task, "proba"):
        return _Classifier(network, task.binary), ["label", "probabilities"]
    return _Regressor(network, task), ["prediction"]


def _import_onnx():
    try:
        import onnx  # noqa: PLC0415
        import onnxscript  # noqa: F401, PLC0415 (the dynamo exporter needs it)
    except ImportError as exc:
        raise ImportError(
            "sknd.onnx.to_onnx needs the onnx and onnxscript packages: pip install onnx "
            'onnxscript (or, in the sknd checkout, pip install -e ".[onnx]").'
        ) from exc
    return onnx


@contextlib.contextmanager
def _quiet_exporter():
    """Silence the exporter's progress reports, log warnings and torch's deprecations.

    They concern torch and the exporter (torchvision operators not registered,
    attribute types defaulted), never the exported model.
    """
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "onnx_ir", "onnxscript")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _label_output(onnx, model, classes):
    """Replace the class-position output by the class labels (a Gather of ``classes_``)."""
    graph = model.graph
    classes = np.asarray(classes)
    if classes.dtype.kind in "OUS":
        classes = np.asarray([str(label) for label in classes], dtype=object)
    constant = onnx.numpy_helper.from_array(classes, name="classes")
    graph.initializer.append(constant)
    position = graph.output[0]
    graph.node.append(
        onnx.helper.make_node("Gather", ["classes", position.name], ["label"], axis=0)
    )
    label = onnx.helper.make_tensor_value_info("label", constant.data_type, [None])
    label.type.tensor_type.shape.dim[0].CopyFrom(position.type.tensor_type.shape.dim[0])
    graph.output.remove(position)
    graph.output.insert(0, label)


def to_onnx(estimator, path=None):
    """Export a fitted estimator to an ONNX model.

    The model has one input, ``"X"``: float32 band values of shape
    ``(n_samples, n_features_in_)`` (any number of rows), and its outputs are

    - :class:`~sknd.NDClassifier`: ``"label"`` (``predict``, the labels of
      ``classes_``) and ``"probabilities"`` (``predict_proba``, float64);
    - :class:`~sknd.NDRegressor`: ``"prediction"`` (``predict``, float64);
    - :class:`~sknd.NDTransformer`: ``"indices"`` (``transform``, float32).

    The values equal the estimator's methods on float32 inputs to 1e-5
    (tests/export/test_onnx.py). The graph does not validate its input: negative
    reflectances or NaN give meaningless outputs. Its metadata
    (``model.metadata_props``, strings) records what :func:`check_input`
    checks: ``"band_names"`` (a JSON list, in the order of the input's
    columns), ``"n_features"``, ``"input_dtype"`` (``"float32"``) and
    ``"variant"``; and ``"estimator"`` and ``"sknd_version"``.

    Parameters
    ----------
    estimator : NDClassifier, NDRegressor or NDTransformer
        A fitted estimator.
    path : str or path-like, default=None
        Where to write the model as well (an ``.onnx`` file).

    Returns
    -------
    model : onnx.ModelProto
        The model, e.g. for ``onnxruntime.InferenceSession(model.SerializeToString())``.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ImportError
        If onnx or onnxscript is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd import NDClassifier
    >>> X = np.random.default_rng(0).uniform(0.05, 0.5, (60, 3))
    >>> y = X[:, 0] > X[:, 1]
    >>> clf = NDClassifier(max_epochs=2, random_state=0).fit(X, y)
    >>> model = to_onnx(clf)  # doctest: +SKIP
    >>> [output.name for output in model.graph.output]  # doctest: +SKIP
    ['label', 'probabilities']
    """
    check_is_fitted(estimator)
    onnx = _import_onnx()
    module, output_names = _export_module(estimator)
    n_features = estimator.n_features_in_
    example = (torch.full((4, n_features), 0.5),)
    batch = torch.export.Dim("n_samples")
    with _quiet_exporter(), torch.no_grad():
        program = torch.onnx.export(
            module,
            example,
            dynamo=True,
            input_names=[INPUT_NAME],
            output_names=[name if name != "label" else "position" for name in output_names],
            dynamic_shapes=({0: batch},),
            verbose=False,
        )
    model = program.model_proto
    if output_names[0] == "label":
        _label_output(onnx, model, estimator.classes_)
    onnx.helper.set_model_props(
        model,
        {
            "band_names": json.dumps([str(name) for name in estimator.band_names_]),
            "n_features": str(n_features),
            "input_dtype": "float32",
            "variant": str(estimator._fitted_param("variant")),
            "estimator": type(estimator).__name__,
            "sknd_version": __version__,
        },
    )
    if path is not None:
        onnx.save(model, path)
    return model


def _load_onnx(path):
    """The ONNX model in the file ``path``; a file that is none (an sknd model file, a
    truncated download) is a ValueError saying so."""
    onnx = _import_onnx()
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic == b"PK\x03\x04":
        raise ValueError(
            f"{os.fsdecode(path)!r} is an sknd model file (estimator.save_model), not an ONNX "
            "model: load it with sknd.load_model, or export the estimator with "
            "sknd.onnx.to_onnx."
        )
    try:
        return onnx.load(path, load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and others: the file is no ONNX model
        raise ValueError(
            f"{os.fsdecode(path)!r} is not an ONNX model ({type(exc).__name__}: {exc}); export "
            "one with sknd.onnx.to_onnx."
        ) from None


def _metadata(model):
    """The sknd metadata of an ONNX model, a path to one or an onnxruntime session."""
    if isinstance(model, (str, os.PathLike)):
        model = _load_onnx(model)
    if hasattr(model, "get_modelmeta"):  # an onnxruntime.InferenceSession
        metadata = dict(model.get_modelmeta().custom_metadata_map)
    elif hasattr(model, "metadata_props"):  # an onnx.ModelProto
        metadata = {prop.key: prop.value for prop in model.metadata_props}
    else:
        raise TypeError(
            "model must be an onnx.ModelProto, a path to an .onnx file or an "
            f"onnxruntime.InferenceSession, got {type(model).__name__}."
        )
    missing = [key for key in _INPUT_METADATA if key not in metadata]
    if missing:
        version = metadata.get("sknd_version", "none recorded")
        raise ValueError(
            f"The ONNX model lacks the metadata {missing} that sknd.onnx.check_input checks "
            f"(sknd version: {version}): export the estimator again with "
            "sknd.onnx.to_onnx of this sknd version."
        )
    return metadata


def check_input(model, X, bands=None):
    """Validate band values for an exported model and cast them to its float32.

    Checks ``X`` against the metadata :func:`to_onnx` stores in the model: the
    number of bands, their names and order (when ``X`` is a DataFrame, from its
    columns, or when ``bands`` is given), and the values as the estimators do
    (no NaN or infinity, none too large for float32, none negative for
    ``variant="reflectance"``). Integer and float64 values are cast to float32,
    the graph's input type, explicitly: the estimators' networks compute in
    float32 too, so nothing beyond float32 precision is lost that they keep.

    Parameters
    ----------
    model : onnx.ModelProto, str, path-like or onnxruntime.InferenceSession
        A model exported by :func:`to_onnx`, a path to one, or an onnxruntime
        session of one.
    X : array-like of shape (n_samples, n_features)
        Band values, one column per band in the order the estimator was
        fitted on.
    bands : sequence of str, default=None
        Names of the columns of ``X``, checked against the model's band names
        (a DataFrame's columns are checked without it).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32, C-contiguous
        The input to feed to the model's ``"X"``.

    Raises
    ------
    ValueError
        If ``X`` is not a 2D array of numbers, has another number of bands or
        other band names (or order) than the model, holds NaN, infinite, too
        large or (for ``variant="reflectance"``) negative values, or the model
        lacks sknd's metadata (exported before it was stored).
    TypeError
        If ``model`` is none of the accepted types.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd import NDClassifier
    >>> X = np.random.default_rng(0).uniform(0.05, 0.5, (60, 3))
    >>> clf = NDClassifier(max_epochs=2, random_state=0, bands=["red", "nir", "swir"])
    >>> model = to_onnx(clf.fit(X, X[:, 0] > X[:, 1]))  # doctest: +SKIP
    >>> check_input(model, X, bands=["red", "nir", "swir"]).dtype  # doctest: +SKIP
    dtype('float32')
    """
    metadata = _metadata(model)
    model_bands = json.loads(metadata["band_names"])
    n_features = int(metadata["n_features"])
    columns = getattr(X, "columns", None)
    if bands is None and columns is not None:
        bands = columns
    if bands is not None:
        bands = [str(name) for name in bands]
        if bands != model_bands:
            raise ValueError(
                f"The columns of X are {bands}, but the model was exported with the bands "
                f"{model_bands}, in this order: select and order the columns of X as these "
                "(sknd.raster matches the bands of a scene by name for the estimator)."
            )
    source_dtype = getattr(X, "dtype", None)
    estimator = f"the ONNX model of {metadata.get('estimator', 'an sknd estimator')}"
    # Masked values (rasterio's read(masked=True)) refused, as the estimators refuse them.
    X = np.asarray(plain_values(X, "X", estimator))
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must hold band values (numbers), got an array of {X.dtype}.")
    if X.ndim != 2 or X.shape[1] != n_features or len(X) == 0:
        raise ValueError(
            f"The model expects X of shape (n_samples, {n_features}) with at least one row, "
            f"one column per band "
            f"{model_bands}, got shape {X.shape}. Reshape an image of shape (rows, columns, "
            f"{n_features}) with X.reshape(-1, {n_features})."
        )
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    check_band_values(
        X,
        name="X",
        estimator_name=estimator,
        feature_names=model_bands,
        non_negative=metadata["variant"] == "reflectance",
        source_dtype=source_dtype,
    )
    return np.ascontiguousarray(X, dtype=np.dtype(metadata["input_dtype"]))


def run(model, X, bands=None, *, block_rows=16384):
    """Run an exported model on validated band values with onnxruntime.

    Validates ``X`` with :func:`check_input`, then runs the model on blocks of
    ``block_rows`` rows: onnxruntime materialises each intermediate array of
    the graph (e.g. ``(n_samples, n_pairs)`` numerators and denominators), so
    a whole scene at once moves them through main memory, while blocks keep
    them in cache (faster on a 1 Mpx scene: benchmarks/bench_onnx.py, and
    benchmarks/RESULTS.md, "ONNX: checked input, blocks of rows").

    Parameters
    ----------
    model : onnx.ModelProto, str, path-like or onnxruntime.InferenceSession
        A model exported by :func:`to_onnx`, a path to one, or an onnxruntime
        session of one (pass a session to run a model many times: making one
        costs milliseconds, and sets the threads onnxruntime uses).
    X : array-like of shape (n_samples, n_features)
        Band values, as for :func:`check_input`.
    bands : sequence of str, default=None
        Names of the columns of ``X``, checked against the model's band names.
    block_rows : int, default=16384
        Rows per onnxruntime call.

    Returns
    -------
    outputs : dict of str to ndarray
        Each output of the model by name (e.g. ``"label"`` and
        ``"probabilities"`` for a classifier), over all rows of ``X``.

    Raises
    ------
    ValueError
        As :func:`check_input`, or if ``block_rows`` is not a positive integer.
    ImportError
        If onnxruntime is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd import NDClassifier
    >>> X = np.random.default_rng(0).uniform(0.05, 0.5, (60, 3))
    >>> clf = NDClassifier(max_epochs=2, random_state=0).fit(X, X[:, 0] > X[:, 1])
    >>> outputs = run(to_onnx(clf), X)  # doctest: +SKIP
    >>> bool((outputs["label"] == clf.predict(X)).all())  # doctest: +SKIP
    True
    """
    if isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer)):
        raise ValueError(f"block_rows must be a positive integer, got {block_rows!r}.")
    if block_rows < 1:
        raise ValueError(f"block_rows must be a positive integer, got {block_rows!r}.")
    X = check_input(model, X, bands)
    session = model
    if not hasattr(model, "get_modelmeta"):
        try:
            import onnxruntime  # noqa: PLC0415
        except ImportError as exc:
            raise ImportError(
                "sknd.onnx.run needs onnxruntime: pip install onnxruntime "
                '(or, in the sknd checkout, pip install -e ".[onnx]").'
            ) from exc
        if not isinstance(model, (str, os.PathLike)):
            model = model.SerializeToString()
        session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    outputs = None
    for start in range(0, len(X), block_rows):
        block = session.run(names, {INPUT_NAME: X[start : start + block_rows]})
        if outputs is None:
            outputs = [np.empty((len(X), *part.shape[1:]), part.dtype) for part in block]
        for whole, part in zip(outputs, block):
            whole[start : start + len(part)] = part
    return dict(zip(names, outputs))
