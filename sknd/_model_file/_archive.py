"""A model file's zip archive read in bounded memory: its members, its JSON, its arrays.

Every size is checked against what the archive's directory and each array's
``.npy`` header announce *before* the data is decompressed, and every read is
capped at the announced size: a small hostile file cannot make the reader
inflate or hold more than the limits of :mod:`._format`.
"""

import json
import math
import tokenize
import zipfile

import numpy as np

from ._format import (
    ARRAY_KINDS,
    ARRAYS,
    MAX_ARRAY_BYTES,
    MAX_MEMBERS,
    MAX_METADATA_BYTES,
    MAX_TOTAL_BYTES,
    METADATA,
    Malformed,
)

__all__ = []


def read_archive(archive):
    """``(metadata, arrays)``: the parsed ``model.json`` and ``{name: (archive, member)}``."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise Malformed(f"it holds {len(members)} files, more than any model has")
    names = [member.filename for member in members]
    if METADATA not in names:
        raise Malformed(f"it has no {METADATA}")
    total = sum(member.file_size for member in members)
    if total > MAX_TOTAL_BYTES:
        raise Malformed(f"its files add up to {total} bytes, more than any model has")
    arrays = {}
    for member in members:
        name = member.filename
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise Malformed(f"{name!r} is compressed with method {member.compress_type}")
        if member.flag_bits & 0x1:
            raise Malformed(f"{name!r} is encrypted")
        if name == METADATA:
            metadata = _read_metadata(archive, member)
        elif name.startswith(ARRAYS) and name.endswith(".npy"):
            arrays[name[len(ARRAYS) : -len(".npy")]] = (archive, member)
        else:
            raise Malformed(f"it holds an unexpected file {name!r}")
    if names.count(METADATA) > 1 or len(arrays) + 1 != len(names):
        raise Malformed("it holds a file twice")
    return metadata, arrays


def _read_metadata(archive, member):
    if member.file_size > MAX_METADATA_BYTES:
        raise Malformed(f"{METADATA} is {member.file_size} bytes, too large")
    with archive.open(member) as file:
        text = file.read(member.file_size + 1)
    try:
        return json.loads(text.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise Malformed(f"{METADATA} is not valid JSON ({exc})") from None


def _no_constant(name):
    raise Malformed(f"{METADATA} holds {name}, which JSON does not allow")


def read_array(archive, member, name):
    """One ``.npy`` member; its header checked against the member's size before any data is read."""
    if member.file_size > MAX_ARRAY_BYTES:
        raise Malformed(f"array {name!r} is {member.file_size} bytes, too large for a model")
    with archive.open(member) as file:
        shape, fortran, dtype = _read_header(file, name)
        expected = math.prod(shape) * dtype.itemsize
        data_size = member.file_size - file.tell()
        if data_size != expected:
            raise Malformed(
                f"array {name!r} holds {data_size} bytes where its header announces {expected}"
            )
        data = file.read(expected)
    if len(data) != expected:
        raise Malformed(f"array {name!r} ends after {len(data)} of its {expected} bytes")
    array = np.frombuffer(data, dtype=dtype)
    array = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    return np.array(array, dtype=dtype.newbyteorder("="))


def _read_header(file, name):
    try:
        version = np.lib.format.read_magic(file)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    # numpy reparses a header that is not a Python literal with tokenize, whose errors are
    # neither ValueError nor SyntaxError (a header cut or bit-flipped mid-dict).
    except (ValueError, SyntaxError, tokenize.TokenError) as exc:
        raise Malformed(f"array {name!r} is not a numpy .npy array ({exc})") from None
    if dtype.hasobject or dtype.kind not in ARRAY_KINDS or dtype.fields is not None:
        raise Malformed(f"array {name!r} has dtype {dtype}, not numbers or text")
    if any(length < 0 for length in shape):
        raise Malformed(f"array {name!r} has a negative length in its shape {shape}")
    return shape, fortran, dtype
