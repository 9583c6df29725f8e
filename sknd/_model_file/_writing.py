"""A fitted estimator written as a model file: all or nothing, loadable, with the umask's mode.

The archive is built in memory and read back by the reader before anything
touches the disk, so that a file that cannot be loaded is never written (class
labels a model file cannot hold exactly are refused with what to do). It is
then written to a temporary file beside the target and renamed over it: the
target is either the old file or the whole new one. The file gets the
permissions a new file of the user gets (``0o666`` less the umask), or those of
the file it replaces.
"""

import io
import json
import math
import os
import stat
import tempfile
import zipfile

import numpy as np

from .._version import __version__
from ._fields import is_plain
from ._format import ARRAY_KINDS, ARRAYS, BAND_FIELDS, FORMAT, FORMAT_VERSION, METADATA
from ._reading import read_fields

__all__ = []


def save_model(estimator, path):
    """Write the fitted sknd ``estimator`` to ``path`` (see ``BaseND.save_model``)."""
    path = os.fsdecode(os.fspath(path))
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot save the model as {path!r}: no folder {directory!r}")
    content = estimator._model_content()
    arrays = {}
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "sknd_version": __version__,
        "estimator": type(estimator).__name__,
        "params": _plain_params(estimator.get_params(deep=False)),
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": _names(getattr(estimator, "feature_names_in_", None)),
        "bands": [
            {field: getattr(band, field) for field in BAND_FIELDS} for band in estimator.bands_
        ],
        "band_names_given": estimator._fitted_band_names() is not None,
        "epsilon": float(estimator.epsilon_),
        "variant": str(estimator.variant_),
    }
    # Each band's range at fit, for networks that see raw band values (the scenes far
    # outside it warn, as with the estimator); None for the others.
    content["band_range"] = estimator._band_range_to_check()
    if "classes" in content:
        classes = np.asarray(content["classes"])
        metadata["classes_as_objects"] = classes.dtype == object
        content["classes"] = _storable_classes(classes)
    metadata.update(_with_references(content, "", arrays))
    payload = json.dumps(metadata, indent=1, allow_nan=False).encode("utf-8")
    archive = _archive(payload, arrays)
    try:
        read_fields(archive, path)
    except ValueError as exc:
        raise ValueError(
            f"sknd would write a model file it cannot load ({exc}); nothing was written. "
            "Please report this to the sknd developers, and keep a pickle of the estimator "
            "(joblib.dump) meanwhile."
        ) from None
    _write_atomically(path, archive)


def _storable_classes(classes):
    """The class labels as an array a model file holds exactly, or a ValueError saying why not."""
    if classes.dtype == object:
        if not all(isinstance(label, str) for label in classes):
            raise ValueError(
                "A model file holds class labels of one numpy type (numbers or strings); "
                f"these are Python objects of other types ({classes[:3].tolist()} ...). "
                "Fit on labels converted with np.asarray(y, dtype=str) or to numbers."
            )
        ending = [label for label in classes if label.endswith("\x00")]
        if ending:
            raise ValueError(
                f"Class labels {ending[:3]!r} end with NUL characters, which a model file's "
                "text arrays drop ('a' and 'a\\x00' would become one class): rename those "
                "classes so that none ends with NUL, and fit again."
            )
        classes = classes.astype(str)
    if classes.dtype.kind not in ARRAY_KINDS:
        raise ValueError(
            f"A model file holds class labels that are numbers or text, not {classes.dtype} "
            "labels: fit on labels converted to integers or strings."
        )
    return classes


def _plain_params(params):
    """The parameters JSON holds as they are; others (e.g. a RandomState) become None."""
    plain = {}
    for name, value in params.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        elif isinstance(value, tuple):
            value = list(value)
        if isinstance(value, list) and not all(is_plain(item) for item in value):
            value = None
        elif not (isinstance(value, list) or is_plain(value)):
            value = None
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        plain[name] = value
    return plain


def _names(names):
    return None if names is None else [str(name) for name in names]


def _with_references(value, key, arrays):
    """``value`` with every numpy array replaced by ``{"array": name}``, stored in ``arrays``."""
    if isinstance(value, np.ndarray):
        arrays[key] = value
        return {"array": key}
    if isinstance(value, dict):
        return {
            name: _with_references(item, f"{key}.{name}" if key else name, arrays)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_with_references(item, f"{key}.{i}", arrays) for i, item in enumerate(value)]
    return value


def _archive(payload, arrays):
    """The bytes of the zip archive: ``model.json`` and one ``.npy`` member per array.

    The members carry a fixed date: a model's file has the same bytes whenever it is
    saved, so that the checksum an MLM Item gives (``export_model("mlm")``) holds.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(_member(METADATA), payload)
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            archive.writestr(_member(f"{ARRAYS}{name}.npy"), member.getvalue())
    return buffer.getvalue()


def _member(name):
    """A zip member of the archive, dated as zip's epoch, readable by its owner (0600)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o600 << 16
    return info


def _write_atomically(path, content):
    """``content`` written to a temporary file beside ``path``, then renamed: all or nothing."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = _new_file_mode(path)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".sknd-model-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)  # mkstemp's 0600 would lock colleagues (and servers) out
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _new_file_mode(path):
    """The mode of the file ``path`` replaces, else ``0o666`` less the umask."""
    try:
        existing = os.stat(path)
    except OSError:
        return 0o666 & ~_umask()
    if stat.S_ISREG(existing.st_mode):
        return stat.S_IMODE(existing.st_mode)
    return 0o666 & ~_umask()


def _umask():
    """The process's umask, read without changing it where the system tells it (Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore at once
    os.umask(mask)
    return mask
