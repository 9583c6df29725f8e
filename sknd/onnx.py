"""Export fitted estimators to ONNX, for serving without Python or torch.

:func:`to_onnx` traces the fitted network with ``torch.onnx.export`` (the
dynamo exporter; the ND layer has no custom operator, so the model holds only
standard ONNX operators) and appends what the estimator's method does to the
network's outputs, so that an ONNX runtime reproduces ``predict_proba`` /
``predict`` (:class:`~sknd.NDClassifier`), ``predict``
(:class:`~sknd.NDRegressor`) or ``transform`` (:class:`~sknd.NDTransformer`).

Needs the ``onnx`` extra: ``pip install "sknd[onnx]"`` (onnx and onnxscript;
onnxruntime to run the models).
"""

import contextlib
import io
import json
import logging
import warnings

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted
from torch import nn

from . import __version__
from .nn import NormalizedDifference

__all__ = ["to_onnx"]

#: Name of the model's input: float32 band values of shape (n_samples, n_features).
INPUT_NAME = "X"


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
    from ._transformer import NDTransformer  # noqa: PLC0415 (avoid a cycle at import)

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
            'sknd.onnx.to_onnx needs the onnx and onnxscript packages: pip install "sknd[onnx]".'
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
    (tests/test_onnx.py). The model does not validate its input as the
    estimators do: negative reflectances or NaN give meaningless outputs.
    Its metadata records the band names (``"band_names"``, a JSON list), the
    estimator and the sknd version.

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
            "estimator": type(estimator).__name__,
            "sknd_version": __version__,
        },
    )
    if path is not None:
        onnx.save(model, path)
    return model
