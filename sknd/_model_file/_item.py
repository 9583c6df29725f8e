"""A model file reached through a STAC MLM Item: the bytes of its ``mlm:model`` asset.

``export_model("mlm", href=...)`` describes a model file as a STAC Item
(:mod:`sknd._export._mlm`); :func:`sknd.load_model` takes such an
Item's JSON file in place of the model file and reads the asset of role
``mlm:model`` (of ``mlm:artifact_type`` ``"sknd.save_model"`` where the Item
has several model assets). A relative ``href`` is read from the Item's
folder, a ``file://`` URL as a local path; a remote one (``http(s)://`` ...)
only when the caller allows network reads. The asset's bytes are checked
against its ``file:checksum`` (SHA-256 multihash) and ``file:size`` when the
Item has them, then read as any model file is: no code runs.
"""

import hashlib
import json
import os
import urllib.parse
import urllib.request

from .._export._mlm import ARTIFACT_TYPE
from ._format import MAX_FILE_BYTES

__all__ = []

_LOCAL_SCHEMES = ("", "file")


def is_item(content):
    """Whether a file's bytes are JSON (an Item) rather than a zip archive (a model file)."""
    return content.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


def model_asset_bytes(content, path, allow_network):
    """The bytes of the model file of the Item ``path`` (its bytes ``content``), and its name."""
    try:
        item = json.loads(content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path!r} is neither an sknd model file nor a STAC Item (JSON): {exc}."
        ) from None
    key, asset = _model_asset(item, path)
    href = asset.get("href")
    what = f"the asset {key!r} of the STAC Item {path!r}"
    if not isinstance(href, str) or not href:
        raise ValueError(f"{what} has no href: it does not say where the model file is.")
    parts = urllib.parse.urlsplit(href)
    if len(parts.scheme) > 1 and parts.scheme not in _LOCAL_SCHEMES:
        if not allow_network:
            raise ValueError(
                f"{what} is at {href!r}, a remote address: load_model reads over the network "
                "only when asked to, load_model(path, allow_network=True), or download the file "
                "and load it."
            )
        data = _download(href, what)
    else:
        local = urllib.request.url2pathname(parts.path) if parts.scheme == "file" else href
        local = os.path.join(os.path.dirname(os.path.abspath(path)), local)
        try:
            with open(local, "rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise ValueError(f"cannot read {what} ({local!r}): {exc}") from None
    _check_file_fields(asset, data, what)
    return data, f"{path} (asset {key!r}, {href})"


def _model_asset(item, path):
    """The Item's ``mlm:model`` asset that is an sknd model file: ``(key, asset)``."""
    assets = item.get("assets") if isinstance(item, dict) else None
    if not isinstance(assets, dict):
        raise ValueError(f"{path!r} is not a STAC Item with assets (nor an sknd model file).")
    models = [
        (key, asset)
        for key, asset in assets.items()
        if isinstance(asset, dict)
        and isinstance(asset.get("roles"), list)
        and "mlm:model" in asset["roles"]
    ]
    if not models:
        raise ValueError(
            f"the STAC Item {path!r} has no asset of role 'mlm:model' (its assets: "
            f"{sorted(assets)}): it describes no model file to load."
        )
    if len(models) > 1:
        models = [(key, a) for key, a in models if a.get("mlm:artifact_type") == ARTIFACT_TYPE]
    if len(models) != 1:
        raise ValueError(
            f"the STAC Item {path!r} has several 'mlm:model' assets and "
            f"{'none' if not models else 'several'} of mlm:artifact_type {ARTIFACT_TYPE!r}."
        )
    key, asset = models[0]
    kind = asset.get("mlm:artifact_type", ARTIFACT_TYPE)
    if kind != ARTIFACT_TYPE:
        raise ValueError(
            f"the asset {key!r} of the STAC Item {path!r} is a model of mlm:artifact_type "
            f"{kind!r}, not an sknd model file ({ARTIFACT_TYPE!r}): load it with its framework."
        )
    return key, asset


def _download(href, what):
    try:
        with urllib.request.urlopen(href, timeout=60) as response:  # noqa: S310 (asked for)
            data = response.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {what} ({href!r}): {exc}") from None
    return data


def _check_file_fields(asset, data, what):
    """The size and SHA-256 checksum the Item gives for the file, where it gives them."""
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{what} is not an sknd model file: larger than any model file.")
    size = asset.get("file:size")
    if isinstance(size, int) and size != len(data):
        raise ValueError(
            f"{what} is {len(data)} bytes where the Item says {size} (file:size): a "
            "truncated or replaced file."
        )
    checksum = asset.get("file:checksum")
    if isinstance(checksum, str) and checksum.startswith("1220"):  # sha2-256 multihash
        if hashlib.sha256(data).hexdigest() != checksum[4:].lower():
            raise ValueError(
                f"{what} does not match the Item's file:checksum: a replaced or damaged file."
            )
