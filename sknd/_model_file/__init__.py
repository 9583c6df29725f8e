"""sknd model files: a fitted estimator's network as JSON and numpy arrays, loaded without code.

A pickle runs code when it is loaded, and rebuilding a pickled estimator imports
torch, skorch and scikit-learn. A model file holds only what prediction needs:
a zip archive with ``model.json`` (format version, sknd version, estimator,
parameters, bands, classes and the network's layers) and one ``.npy`` array per
weight, read with ``allow_pickle=False``. The package, one concern a module:

- :mod:`._format`: the format itself (fields, layer kinds, limits, value rules), which
  the writer, the reader and docs/model_files.md follow;
- :mod:`._writing`: ``save_model``, all or nothing, read back before it is written;
- :mod:`._archive`: the zip archive and its arrays read in bounded memory;
- :mod:`._fields`: every field and array checked before anything is built;
- :mod:`._reading`: a file's bytes to checked fields, errors as ``ValueError``;
- :mod:`._saved_model`: :func:`load_model` and the :class:`SavedModel` it returns;
- :mod:`._item`: a STAC MLM Item read as the model file it points to.

May import: :mod:`sknd._export`, :mod:`sknd._inference`'s evaluator, :mod:`sknd._data`'s
numpy modules (``_validation``, ``_decoding``), :mod:`sknd._nd`, :mod:`sknd.bands` and
:mod:`sknd._version`; not the estimators or training, and nothing that imports torch,
scikit-learn or pandas when loaded: a model file loads and predicts without them
(``tests/test_architecture.py`` and ``tests/export/test_model_file.py`` check it).
"""

from ._format import FORMAT_VERSION
from ._saved_model import SavedModel, from_bytes, load_model
from ._writing import save_model

__all__ = ["FORMAT_VERSION", "SavedModel", "load_model", "save_model"]

# Pickles of a SavedModel made before the module became a package name this function.
_from_bytes = from_bytes
