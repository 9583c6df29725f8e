"""The estimator methods that write a fitted model out: formulas, model files, exports.

:class:`ExportMixin` is part of :class:`~sknd._estimators._base.BaseND`; the formats themselves
live in :mod:`sknd.inspection` (formulas) and :mod:`sknd._model_file` (model files,
openEO and Earth Engine).
"""

from sklearn.utils.validation import check_is_fitted

from ..inspection import export_formulas
from ..networks import describe

__all__ = ["ExportMixin"]


class ExportMixin:
    """``export_formulas``, ``save_model`` and ``export_model`` of the sknd estimators."""

    def export_formulas(self, format="numpy", top=None, precision=None, sensor=None):
        """Write each learned index as a formula over the band names.

        Parameters
        ----------
        format : {"numpy", "gee", "qgis", "latex", "text", "asi"}, default="numpy"
            ``"numpy"``: a Python expression over band arrays (names made
            identifiers by :func:`sknd.inspection.band_identifiers`);
            ``"gee"``: an Earth Engine ``ee.Image.expression`` string reading
            bands with ``b('name')``; ``"qgis"``: a QGIS raster-calculator
            expression over layers named after the bands (``"B8@1"``);
            ``"latex"``; ``"text"``; ``"asi"``: an Awesome Spectral Indices
            formula over the catalogue's band symbols (``N``, ``R``, ...).
        top : int, default=None
            Only the ``top`` most important indices, most important first. By
            default all, in the order of the rows of ``indices_``.
        precision : int, default=None
            Significant digits of the weights; by default exact for ``"numpy"``,
            ``"gee"``, ``"qgis"`` and ``"asi"`` (the formulas reproduce the
            model), 4 for ``"latex"`` and ``"text"``.
        sensor : str, default=None
            Write the bands as another sensor preset's, matched by common name
            (``"sentinel2"``: a model fitted on Landsat 8 bands exports
            Sentinel-2 formulas); None keeps the model's band names.

        Returns
        -------
        formulas : list of str
            One formula per index, e.g.
            ``"(1.73*B8 - 0.58*B4) / (1.73*B8 + 0.58*B4 + 1e-06)"``.

        See Also
        --------
        sknd.inspection.export_formulas : The same as a function, with details.
        """
        check_is_fitted(self)
        return export_formulas(self, format=format, top=top, precision=precision, sensor=sensor)

    def save_model(self, path):
        """Save the fitted model as an sknd model file, for prediction elsewhere.

        The file holds what prediction needs (the network's weights, the
        bands, the classes or target scale, the parameters) as JSON and numpy
        arrays: :func:`sknd.load_model` reads it without running code from
        it, without torch or scikit-learn, and its model predicts exactly as
        this estimator does on the CPU. It keeps no training
        state (optimizer, history): use a pickle to continue training with
        ``partial_fit``. The format is described in the documentation's
        "Model files" page.

        Parameters
        ----------
        path : str or path-like
            File to write (by convention ``*.sknd``). It is replaced only once
            the whole file is written.

        Returns
        -------
        None

        See Also
        --------
        sknd.load_model : Load the file.
        """
        check_is_fitted(self)
        if describe(self._module) is None:
            raise ValueError(
                f"This {type(self).__name__} has a network with layers a model file cannot "
                "describe (a custom torch module): save it with a pickle (joblib.dump)."
            )
        from .._model_file import save_model

        save_model(self, path)

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

        The same as :meth:`sknd.SavedModel.export_model` on this estimator's
        model file (see it for the parameters): both compute, with the other
        system's own operations, what the estimator computes per pixel.

        Parameters
        ----------
        format : {"openeo", "earthengine", "mlm"}, default="openeo"
            An openEO process (a dict), Earth Engine Python code (a str) or
            a STAC Item of the Machine Learning Model extension (a dict).
        output : {"class", "proba", "predict", "indices"}, default=None
            What to compute; by default a classifier's class codes, a
            regressor's predictions, a transformer's indices.
        bands : list of str, default=None
            The band names of the data, matched to the model's by name.
        sensor : str, default=None
            The sensor preset of ``bands``; guessed when None.
        collection : str, default=None
            openEO only: the collection to load.
        dimension : str, default="bands"
            openEO only: the name of the cube's band dimension.
        scale, offset : float or list of float, default=1.0 and 0.0
            Each band is read as ``band * scale + offset`` (one number for all
            bands, or one per band in the order of ``band_names_``): a model
            fitted on reflectances runs on digital numbers.
        form : {"auto", "graph", "udf"}, default="auto"
            openEO only: the pure process graph, a ``run_udf`` process with
            the model as data, or the graph where it is small and the UDF
            beyond.
        nodata : float, default=None
            The bands' no-data value: where a band holds it or NaN, the
            outputs are no-data and class codes the fill code.
        href, onnx_href : str, default=None
            ``"mlm"`` only: where the model file (saved with
            :meth:`save_model`), and the same model as ONNX, lie.
        colors : list or dict, default=None
            ``"mlm"`` only: a colour per class (``"#rrggbb"``, a colour name or an
            ``(R, G, B)`` tuple of 0..255, as the class maps take them).

        Returns
        -------
        exported : dict or str
            The openEO process, the Earth Engine code or the STAC Item.
        """
        check_is_fitted(self)
        import os
        import tempfile

        from .._model_file import load_model

        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "model.sknd")
            self.save_model(path)
            model = load_model(path)
        return model.export_model(
            format,
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
        )
