"""The model a model file holds, for prediction only: :class:`SavedModel` and :func:`load_model`.

Its methods run the numpy / numba evaluator of :mod:`sknd._inference._evaluator` built
from the same float64 weights as the estimator's own methods on the CPU: its
outputs equal theirs bit for bit (and those of :mod:`sknd.raster` with the
estimator). It refuses what the estimator refuses, and like the estimator it
never hands out a non-finite output.
"""

import functools
import os

import numpy as np

from .._data._decoding import class_labels, class_probabilities, regression_targets
from .._data._validation import check_band_values, plain_values
from .._nd._pairs import index_names
from ._format import ESTIMATOR_METHODS
from ._item import is_item, model_asset_bytes
from ._reading import read_fields, read_file

__all__ = ["SavedModel", "load_model"]


def load_model(path, *, allow_network=False):
    """Load a model file written by an sknd estimator's ``save_model``.

    Loading runs no code from the file: it reads JSON and numpy arrays
    (``allow_pickle=False``), checks every field and every array's dtype and
    shape, and imports neither torch nor scikit-learn.

    Parameters
    ----------
    path : str or path-like
        The model file, or a STAC Item (JSON) of the Machine Learning Model
        extension that describes one (``export_model("mlm", href=...)``):
        its asset of role ``mlm:model`` is loaded, a relative ``href`` from
        the Item's folder, checked against the Item's ``file:size`` and
        ``file:checksum``.
    allow_network : bool, default=False
        Whether an Item's model asset may be read from a remote address
        (``https://`` ...); by default only local files are read.

    Returns
    -------
    model : SavedModel
        The fitted model, for prediction only.

    Raises
    ------
    ValueError
        If the file is not an sknd model file, is truncated or malformed, or
        was written in a newer format version; or if an Item has no model
        asset, its asset cannot be read or is no sknd model file: the
        message says which (and names the asset).

    See Also
    --------
    SavedModel : What a loaded model offers.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> import sknd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.6, size=(200, 4))
    >>> clf = sknd.NDClassifier(max_epochs=5, random_state=0).fit(X, X[:, 0] > X[:, 1])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.sknd")
    >>> clf.save_model(path)
    >>> model = sknd.load_model(path)
    >>> model
    SavedModel(NDClassifier, 4 bands, classes [False, True])
    >>> bool((model.predict(X) == clf.predict(X)).all())
    True
    """
    path = os.fsdecode(os.fspath(path))
    content = read_file(path)
    if is_item(content):
        content, path = model_asset_bytes(content, path, allow_network)
    return SavedModel(read_fields(content, path), content)


def from_bytes(content):
    """A :class:`SavedModel` from the bytes of a model file (how one is unpickled)."""
    return SavedModel(read_fields(content, "<bytes>"), content)


class _Method:
    """A method of :class:`SavedModel` that only models of some estimators have.

    Like scikit-learn's ``available_if``: ``hasattr(model, "predict_proba")``
    is False for a regressor's model, so that :mod:`sknd.raster` and other
    callers see what the model offers.
    """

    def __init__(self, function):
        self.function = function
        functools.update_wrapper(self, function)

    def __get__(self, model, owner=None):
        if model is None:
            return self.function
        if self.function.__name__ not in ESTIMATOR_METHODS[model.estimator]:
            raise AttributeError(
                f"This model of an {model.estimator} has no {self.function.__name__!r} method."
            )
        return functools.partial(self.function, model)


class _Finite:
    """``decode`` of the network's outputs, which must be finite (as the estimator's are).

    Checked weights and band values keep them finite; a value beyond what the
    model can evaluate is refused, never handed out as NaN.
    """

    def __init__(self, decode, estimator):
        self.decode = decode
        self.estimator = estimator

    def __call__(self, outputs):
        if not np.isfinite(outputs).all():
            raise ValueError(
                f"This {self.estimator} model computed non-finite network outputs for some "
                "of these band values: they are outside what its weights can evaluate. Check "
                "them for extreme values, and the model file for damage."
            )
        return self.decode(outputs)


class SavedModel:
    """A fitted sknd estimator loaded from a model file: prediction only.

    Returned by :func:`sknd.load_model`. It offers the methods of the
    estimator it was saved from (``predict`` and ``predict_proba`` of an
    :class:`~sknd.NDClassifier`, ``predict`` of an :class:`~sknd.NDRegressor`,
    ``transform`` of an :class:`~sknd.NDTransformer`), which give, bit for
    bit, the values of the estimator's methods on the CPU, and works
    with :mod:`sknd.raster` and ``python -m sknd.raster``. It holds no
    training state (no optimizer, history or torch network): it cannot be
    refitted or passed to ``partial_fit``. Pickling it pickles the model
    file's bytes, checked again when unpickled.

    Parameters
    ----------
    fields : dict
        The checked contents of a model file, as :func:`sknd.load_model`
        reads them; build models with :func:`sknd.load_model`, not directly.
    content : bytes
        The model file itself (what a pickle of the model holds).

    Attributes
    ----------
    estimator : str
        Class name of the estimator that was saved, e.g. ``"NDClassifier"``.
    params : dict
        Its parameters (``get_params()``); values JSON cannot hold (e.g. a
        ``RandomState``) are None.
    sknd_version : str
        Version of sknd that wrote the file.
    n_features_in_ : int
        Number of bands the model takes.
    feature_names_in_ : ndarray of str objects
        Column names seen at fit; only defined when the estimator had them.
    band_names_ : ndarray of str objects
        Names of the bands, as the estimator's ``band_names_``.
    bands_ : tuple of sknd.bands.Band
        The bands as resolved at fit (names, common names, sensor).
    sensor : str or None
        The estimator's ``sensor`` parameter.
    epsilon_, variant_ : float, str
        The ND layer's settings as fitted.
    classes_ : ndarray
        Class labels; only for a classifier's model.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> import sknd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.6, size=(200, 3))
    >>> reg = sknd.NDRegressor(max_epochs=5, random_state=0, bands=["red", "nir", "swir16"])
    >>> reg = reg.fit(X, X[:, 1] - X[:, 0])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.sknd")
    >>> reg.save_model(path)
    >>> model = sknd.load_model(path)
    >>> model.band_names_.tolist(), hasattr(model, "predict_proba")
    (['red', 'nir', 'swir16'], False)
    >>> bool((model.predict(X) == reg.predict(X)).all())
    True
    """

    def __init__(self, fields, content):
        from ..bands import Band

        self._content = content
        self._fields = fields
        self.estimator = fields["estimator"]
        self.params = fields["params"]
        self.sknd_version = fields["sknd_version"]
        self.n_features_in_ = fields["n_features_in"]
        if fields["feature_names_in"] is not None:
            self.feature_names_in_ = np.asarray(fields["feature_names_in"], dtype=object)
        self.bands_ = tuple(Band(**band) for band in fields["bands"])
        self.band_names_ = np.asarray([band.name for band in self.bands_], dtype=object)
        self._band_names_given = fields["band_names_given"]
        sensor = self.params.get("sensor")
        self.sensor = sensor if isinstance(sensor, str) else None
        self.epsilon_ = fields["epsilon"]
        self.variant_ = fields["variant"]
        if "classes" in fields:
            self.classes_ = fields["classes"]
        self._evaluators = {}

    def __reduce__(self):
        return from_bytes, (self._content,)

    def __repr__(self):
        what = f"{self.n_features_in_} bands"
        if hasattr(self, "classes_"):
            shown = self.classes_[:5].tolist()
            what += f", classes {shown}" if len(self.classes_) <= 5 else f", classes {shown} ..."
        return f"SavedModel({self.estimator}, {what})"

    def _fitted_band_names(self):
        """As the estimator's (internal hook of :mod:`sknd.raster`)."""
        return self.band_names_ if self._band_names_given else None

    def _fast_evaluator(self, method):
        """The evaluator of ``method``, built once (hook of :mod:`sknd._inference._pixels`)."""
        evaluator = self._evaluators.get(method)
        if evaluator is None:
            from .._inference._evaluator import FastNetwork

            fields = self._fields
            checks = dict(
                non_negative=self.variant_ == "reflectance",
                estimator_name=self.estimator,
                feature_names=getattr(self, "feature_names_in_", None),
                band_range=fields["band_range"],
            )
            if method == "transform":
                nd = fields["indices"]
                evaluator = FastNetwork.for_indices(
                    nd["pairs"],
                    nd["a"],
                    nd["c"],
                    self.n_features_in_,
                    nd["epsilon"],
                    nd["variant"],
                    **checks,
                )
            else:
                finish = _Finite(self._decoder(method), self.estimator)
                evaluator = FastNetwork.for_layers(
                    fields["network"], self.n_features_in_, finish, **checks
                )
            self._evaluators[method] = evaluator
        return evaluator

    def _decoder(self, method):
        """What turns the network's outputs into those of ``method``."""
        fields = self._fields
        if method == "predict_proba":
            return class_probabilities
        if "classes" in fields:
            return functools.partial(class_labels, classes=fields["classes"])
        target = fields["target"]
        return functools.partial(
            regression_targets, mean=target["mean"], scale=target["scale"], ndim=target["ndim"]
        )

    def _evaluate(self, method, X):
        X = self._check_X(X)
        return self._fast_evaluator(method)(X, checked=True)

    def _check_X(self, X):
        """``X`` as an array of band values, refused as the estimator refuses it."""
        if hasattr(X, "toarray"):
            raise TypeError(
                f"This {self.estimator} model takes dense band values; convert the sparse "
                "matrix with X.toarray()."
            )
        columns = getattr(X, "columns", None)
        names = getattr(self, "feature_names_in_", None)
        if columns is not None and names is not None:
            if [str(column) for column in columns] != list(names):
                raise ValueError(
                    f"The columns of X {[str(c) for c in columns]} are not the bands the "
                    f"{self.estimator} was fitted on, in order: {list(names)}."
                )
        source_dtype = getattr(X, "dtype", None)
        # Masked values (rasterio's read(masked=True)) refused, with the estimator's message.
        X = np.asarray(plain_values(X, "X", self.estimator))
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must hold band values (numbers), got an array of {X.dtype}.")
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2D array of shape (n_samples, {self.n_features_in_}), got shape "
                f"{X.shape}. Reshape a single sample with X.reshape(1, -1); apply the model "
                "to an image with sknd.raster."
            )
        if len(X) == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}).")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {self.estimator} is expecting "
                f"{self.n_features_in_} features as input."
            )
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        check_band_values(
            X,
            name="X",
            estimator_name=self.estimator,
            feature_names=names,
            non_negative=self.variant_ == "reflectance",
            source_dtype=source_dtype,
            band_range=self._fields["band_range"],
        )
        return X

    @_Method
    def predict(self, X):
        """Predict class labels or regression targets, as the estimator's ``predict``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predicted labels (items of ``classes_``) or values.
        """
        return self._evaluate("predict", X)

    @_Method
    def predict_proba(self, X):
        """Class probabilities, as the classifier's ``predict_proba``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the classes of ``classes_``, in that order.
        """
        return self._evaluate("predict_proba", X)

    @_Method
    def transform(self, X):
        """The learned indices, as the transformer's ``transform``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        indices : ndarray of shape (n_samples, n_indices)
            Learned normalized differences, in the dtype of ``X`` (float32 or
            float64).
        """
        return self._evaluate("transform", X)

    @_Method
    def get_feature_names_out(self, input_features=None):
        """Names of the learned indices, ``nd_<band i>_<band j>``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Band names; defaults to ``band_names_``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            One name per column of :meth:`transform`.
        """
        names = self.band_names_
        if input_features is not None:
            names = [str(name) for name in input_features]
            if len(names) != self.n_features_in_:
                raise ValueError(
                    f"input_features has {len(names)} names, but the model takes "
                    f"{self.n_features_in_} bands."
                )
        return index_names(names, self._fields["indices"]["pairs"])

    def export_model(
        self,
        format="openeo",
        *,
        output=None,
        bands=None,
        sensor=None,
        collection=None,
        dimension="bands",
        scale=1.0,
        offset=0.0,
        form="auto",
        nodata=None,
        href=None,
        onnx_href=None,
        colors=None,
    ):
        """The whole model as an openEO process, Earth Engine code or a STAC MLM Item.

        Both compute per pixel what the model computes (every layer, and the
        class codes, probabilities, regression values or learned indices)
        with the other system's own operations, over the bands selected by
        name, so that maps are made where the data lives. See the
        documentation's "Run a model anywhere" page.

        Parameters
        ----------
        format : {"openeo", "earthengine", "mlm"}, default="openeo"
            ``"mlm"``: a STAC Item of the Machine Learning Model extension
            (a dict) describing the model file at ``href``: its task,
            bands (with their common names), value scaling (``scale``,
            ``offset``), classes, hyperparameters and the file itself as
            the ``mlm:model`` asset; :func:`sknd.load_model` and the scene
            command take the Item's JSON file in place of the model file.
            ``"openeo"``: an openEO process (a dict, ``json.dumps`` writes
            it), see ``form``. ``"earthengine"``:
            Python code (a str) defining ``sknd_model(image)``, which returns
            an ``ee.Image`` computed with ``ee.Image.expression``.
        output : {"class", "proba", "predict", "indices"}, default=None
            What to compute: a classifier's ``"class"`` codes (the positions
            in ``classes_``, as :func:`sknd.raster.class_map` numbers them;
            the default) or ``"proba"`` (one band per class); a regressor's
            ``"predict"``; a transformer's ``"indices"``.
        bands : list of str, default=None
            The band names of the data (a collection's or an image's), in any
            order and with other bands too: the model's bands are found among
            them by name as :func:`sknd.bands.match_bands` finds them (other
            sensors' names by common name). By default the model's names.
        sensor : str, default=None
            The sensor preset of ``bands``; guessed when None.
        collection : str, default=None
            openEO only: the collection to load (e.g. ``"SENTINEL2_L2A"``);
            the process then has ``spatial_extent`` and ``temporal_extent``
            parameters. Without it, the process takes a data cube as its
            ``data`` parameter.
        dimension : str, default="bands"
            openEO only: the name of the cube's band dimension.
        scale, offset : float or list of float, default=1.0 and 0.0
            Each band is read as ``band * scale + offset`` before the model:
            one number for all bands, or one per band in the order of
            ``band_names_``. A model fitted on reflectances runs on a
            collection's digital numbers (Sentinel-2 L2A since baseline
            04.00: ``scale=1e-4, offset=-0.1``; Landsat Collection 2 Level-2:
            ``scale=2.75e-5, offset=-0.2``). Either way the data is computed
            as floating point: integer data never overflows.
        form : {"auto", "graph", "udf"}, default="auto"
            openEO only: ``"graph"`` spells every weight in openEO's core
            processes (any back-end runs it, but its size grows with the
            weights); ``"udf"`` runs the model in a Python UDF (``run_udf``
            in ``apply_dimension``: numpy code, the model as data in its
            ``context``; no sknd on the back-end) of a size about that of the
            model file; ``"auto"`` writes the graph up to about 1,500 nodes
            and the UDF beyond, where the graph grows slow to parse and run
            (the documentation's "Run a model anywhere" page).
        nodata : float, default=None
            The bands' no-data value: where a band holds it, or NaN, the
            outputs are no-data (NaN, a masked pixel in Earth Engine) and
            class codes the fill code (255 up to 255 classes, as the
            scene command's maps). None computes every pixel.
        href : str, default=None
            ``"mlm"`` only (and needed there): where the model file lies for
            the Item's readers, a URL or a path relative to the Item's
            folder (e.g. ``"model.sknd"``, the Item written beside it).
        onnx_href : str, default=None
            ``"mlm"`` only: where the same model lies as ONNX
            (:func:`sknd.onnx.to_onnx`), an asset of the Item.
        colors : list or dict, default=None
            ``"mlm"`` only: a colour per class (in the order of ``classes_``, or by
            label; ``"#rrggbb"``, a colour name or an ``(R, G, B)`` tuple of 0..255,
            as the class maps take them), the classes' ``color_hint``.

        Returns
        -------
        exported : dict or str
            The openEO process, the Earth Engine code or the STAC Item.

        Raises
        ------
        ValueError
            If ``bands`` lack a band of the model (the message names it), or
            ``format``, ``output`` or ``form`` is not one of the choices.

        Examples
        --------
        >>> import numpy as np, os, tempfile
        >>> import sknd
        >>> X = np.random.default_rng(0).uniform(0.05, 0.6, size=(200, 2))
        >>> clf = sknd.NDClassifier(max_epochs=2, random_state=0, bands=["B4", "B8"],
        ...                         sensor="sentinel2").fit(X, X[:, 1] > X[:, 0])
        >>> path = os.path.join(tempfile.mkdtemp(), "model.sknd")
        >>> clf.save_model(path)
        >>> graph = sknd.load_model(path).export_model("openeo", collection="SENTINEL2_L2A",
        ...                                            bands=["B02", "B04", "B08"])
        >>> graph["process_graph"]["select"]["arguments"]["bands"]
        ['B04', 'B08']
        >>> udf = clf.export_model("openeo", form="udf", nodata=0)
        >>> [node["process_id"] for node in udf["process_graph"].values()]
        ['filter_bands', 'apply_dimension', 'reduce_dimension']
        >>> item = clf.export_model("mlm", href="model.sknd")
        >>> item["assets"]["model"]["roles"][0], item["properties"]["mlm:input"][0]["bands"]
        ('mlm:model', ['B4', 'B8'])
        """
        from .._export import export_model

        return export_model(
            self,
            self._fields,
            format=format,
            output=output,
            bands=bands,
            sensor=sensor,
            collection=collection,
            dimension=dimension,
            scale=scale,
            offset=offset,
            form=form,
            nodata=nodata,
            href=href,
            onnx_href=onnx_href,
            colors=colors,
            content=self._content,
        )
