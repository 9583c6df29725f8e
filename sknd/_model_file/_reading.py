"""A model file's bytes read into checked fields, every problem a ``ValueError`` naming the file."""

import io
import os
import zipfile
import zlib

from ._archive import read_archive
from ._fields import Reader
from ._format import MAX_FILE_BYTES, Malformed

__all__ = []


def read_file(path):
    """The bytes of the model file ``path``, refused when larger than any model file."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise ValueError(
                    f"{os.fsdecode(path)!r} is not an sknd model file: it is {size} bytes, "
                    f"larger than any model file ({MAX_FILE_BYTES} bytes)."
                )
            content = file.read(size + 1)  # no more than the file held when asked
    except OSError as exc:
        raise ValueError(f"cannot read the model file {os.fsdecode(path)!r}: {exc}") from None
    if len(content) > size:
        raise ValueError(f"the model file {os.fsdecode(path)!r} grew while it was read.")
    return content


def read_fields(content, path):
    """The checked fields of the model file whose bytes are ``content`` (see ``Reader``)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ValueError(
            f"{path!r} is not an sknd model file (not a zip archive: {exc}); model files are "
            "written by an sknd estimator's save_model(). A truncated download looks like this."
        ) from None
    try:
        with archive:
            metadata, arrays = read_archive(archive)
            return Reader(metadata, arrays).model()
    except Malformed as exc:
        raise ValueError(f"{path!r} is not a valid sknd model file: {exc}") from None
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,  # what zipfile raises for some damaged headers
        RuntimeError,
    ) as exc:
        raise ValueError(f"{path!r} is a damaged or truncated sknd model file: {exc}") from None
