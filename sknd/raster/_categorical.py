"""Class maps as integer codes: the code table, its attributes, and labels back from codes.

A GeoTIFF (and any GIS) holds numbers, not labels, so a class map stores each
pixel's class as its *code*: the position of its label in ``classes_``
(``0 .. n_classes - 1``), for string and integer labels alike. ``argmax`` of
the class probabilities gives the same codes. No-data pixels hold the fill
value, which lies outside the codes: by default the largest value of the
smallest unsigned type holding every code (255 in ``uint8`` up to 255
classes, 65535 in ``uint16`` up to 65535). The table from codes to labels
travels with the map in CF attributes (``flag_values``, ``flag_meanings``)
and, losslessly, as JSON text in ``categories`` (a GeoTIFF tag once written).
"""

import json
import re
from numbers import Integral

import numpy as np

from .._inference._pixels import label_fill

__all__ = []

#: Longest label written as a category name (the field width of DBF tables,
#: which many GIS legends and attribute tables are read from).
MAX_LABEL_LENGTH = 254

# Characters no GDAL metadata (XML) or legend can hold: C0 controls but for the
# space-like ones, and DEL; whitespace is escaped in flag_meanings only.
_UNWRITABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class CodeTable:
    """Codes ``0 .. n - 1`` of the labels ``classes``, their dtype and the fill value."""

    def __init__(self, classes, fill_value=None):
        classes = np.asarray(classes)
        if classes.ndim != 1 or len(classes) == 0:
            raise ValueError(
                "A class map needs a one-dimensional, non-empty classes_ (a single-output "
                f"classifier), got classes of shape {classes.shape}."
            )
        self.classes = classes
        self.labels = [category_label(label) for label in classes.tolist()]
        check_label_kinds(self.labels, "classes")
        n = len(classes)
        if fill_value is None:
            # The largest value of the smallest type holding 0..n: never a code.
            self.dtype = _smallest_type(0, n)
            self.fill = int(np.iinfo(self.dtype).max)
        else:
            if isinstance(fill_value, bool) or not _is_integer(fill_value):
                raise TypeError(
                    f"fill_value={fill_value!r} cannot be a class code: pass an integer "
                    f"outside 0..{n - 1} (e.g. 255, or -1), or None for the default."
                )
            self.fill = int(fill_value)
            if 0 <= self.fill < n:
                raise ValueError(
                    f"fill_value={self.fill} is the code of the class {self.labels[self.fill]!r} "
                    f"(codes are 0..{n - 1}, the positions in classes_): no-data pixels would "
                    "read as that class. Pass a value outside the codes, e.g. "
                    f"{255 if n <= 255 else 65535} or -1."
                )
            self.dtype = _smallest_type(min(self.fill, 0), max(self.fill, n - 1))
            if self.dtype is None:
                raise ValueError(
                    f"fill_value={self.fill} does not fit a 64-bit integer class map; "
                    "pass a value such as -1."
                )
        self.codes = np.arange(n, dtype=self.dtype)

    def attrs(self):
        """CF ``flag_values`` / ``flag_meanings``, the ``categories`` table and the fill."""
        return {
            "long_name": "class",
            **table_tags(self.labels),
            "flag_values": self.codes.copy(),
            "_FillValue": np.asarray(self.fill, dtype=self.dtype).item(),
        }


class ClassCodes:
    """A pixel function's labels as their codes (picklable, for dask's workers)."""

    def __init__(self, func, classes, dtype):
        self.func = func
        self.classes = np.asarray(classes)
        self.order = np.argsort(self.classes, kind="stable")
        self.dtype = np.dtype(dtype)

    def __call__(self, X):
        labels = np.asarray(self.func(X))
        sorted_classes = self.classes[self.order]
        found = np.searchsorted(sorted_classes, labels)
        found = np.minimum(found, len(sorted_classes) - 1)
        unknown = sorted_classes[found] != labels
        if np.any(unknown):
            raise ValueError(
                f"The estimator predicted {labels[unknown][0]!r}, which is not in its "
                f"classes_ {self.classes.tolist()}: a class map cannot code it."
            )
        return self.order[found].astype(self.dtype)


def category_label(label):
    """``label`` as written in a class map's table: a JSON-able scalar of writable text."""
    if isinstance(label, np.generic):
        label = label.item()
    if isinstance(label, bytes):
        label = label.decode("utf-8", errors="replace")
    if not isinstance(label, (str, int, float, bool)):
        raise TypeError(
            f"Class label {label!r} of type {type(label).__name__} cannot be written in a "
            "class map's table: labels must be strings, integers, floats or booleans."
        )
    text = str(label)
    if _UNWRITABLE.search(text) or "\n" in text or "\r" in text:
        raise ValueError(
            f"Class label {text!r} holds control characters (line breaks, NUL, ...), which "
            "category names cannot hold: rename the class before fitting or writing the map."
        )
    if len(text) > MAX_LABEL_LENGTH:
        raise ValueError(
            f"Class label {text[:40]!r}... is {len(text)} characters long; category names "
            f"are limited to {MAX_LABEL_LENGTH}: use shorter class names."
        )
    return label


def check_label_kinds(labels, what):
    """Refuse labels that mix text and numbers: one kind would be turned into the other."""
    kinds = {isinstance(label, str) for label in labels}
    if len(kinds) > 1:
        shown = [label for label in labels if isinstance(label, str)][:1]
        shown += [label for label in labels if not isinstance(label, str)][:1]
        raise ValueError(
            f"The {what} mix numbers and strings (e.g. {shown}): a class map's labels are "
            "all numbers or all text, or the numbers would turn into strings. Convert them "
            "to one kind first, e.g. [str(label) for label in labels]."
        )


def table_tags(labels):
    """The code table of labels ``0 .. n - 1`` as text attributes (GeoTIFF tags)."""
    return {
        "flag_values": json.dumps(list(range(len(labels)))),
        # CF flag_meanings holds blank-separated words: blanks become "_".
        "flag_meanings": " ".join(re.sub(r"\s", "_", str(label)) or "_" for label in labels),
        "categories": json.dumps({str(code): label for code, label in enumerate(labels)}),
    }


def _smallest_type(low, high):
    """The smallest integer type holding ``low .. high``: unsigned (colour tables) if it can be.

    Signed maps start at int16, as GeoTIFF's smallest signed type before GDAL 3.7.
    """
    candidates = (
        (np.uint8, np.uint16, np.uint32, np.uint64) if low >= 0 else (np.int16, np.int32, np.int64)
    )
    for candidate in candidates:
        info = np.iinfo(candidate)
        if info.min <= low and high <= info.max:
            return np.dtype(candidate)
    return None


def _is_integer(value):
    return isinstance(value, Integral) or (
        isinstance(value, (float, np.floating)) and float(value).is_integer()
    )


# ------------------------------------------------------------------------ decode
def read_categories(attrs):
    """The ``{code: label}`` table of a class map's attributes, or None."""
    text = attrs.get("categories")
    if text is None:
        return None
    try:
        table = json.loads(text)
        return {int(code): label for code, label in table.items()}
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(
            f"The 'categories' attribute is not a JSON table of codes to labels ({exc})."
        ) from None


def table_labels(table):
    """The labels of a ``{code: label}`` table whose codes are ``0 .. n - 1``, in order."""
    if sorted(table) != list(range(len(table))):
        raise ValueError(
            f"A class map's codes are 0..n-1, got codes {sorted(table)}: make the map with "
            "sknd.raster.class_map or class_map_from_proba."
        )
    return [category_label(table[code]) for code in range(len(table))]


def check_categories(categories):
    """A ``{code: label}`` dict from a dict or a sequence of labels (code = position)."""
    if isinstance(categories, dict):
        table = {}
        for code, label in categories.items():
            if isinstance(code, bool) or not _is_integer(code):
                raise TypeError(f"Category codes must be integers, got {code!r}.")
            table[int(code)] = label
        return table
    if isinstance(categories, (list, tuple)):  # before numpy turns mixed labels into text
        check_label_kinds(categories, "categories")
    labels = np.asarray(categories)
    if labels.ndim != 1:
        raise ValueError(
            "categories must be a dict {code: label} or a one-dimensional sequence of "
            f"labels, got shape {labels.shape}."
        )
    return dict(enumerate(labels.tolist()))


def decode(codes, table, fill_value, fill_label):
    """Labels of the integer array ``codes``; ``fill_value`` pixels get ``fill_label``."""
    codes = np.asarray(codes)
    keys = np.array(sorted(table), dtype=np.int64)
    listed = [table[key] for key in keys.tolist()]
    check_label_kinds(listed, "categories")
    if fill_value is not None and fill_label is not None:
        same = [code for code, label in zip(keys.tolist(), listed) if _equal(label, fill_label)]
        if same:
            raise ValueError(
                f"fill_label={fill_label!r} is the label of code {same[0]}: no-data pixels "
                "would read as that class. Pass a label no class has (e.g. 'nodata' or -1), or "
                "None for NaN."
            )
    labels = np.asarray(listed)
    dtype, fill = label_fill(labels.dtype, fill_label)
    if codes.dtype == np.uint64 and codes.size and codes.max() > np.iinfo(np.int64).max:
        raise ValueError(
            f"Code {codes.max()} is neither a class code ({keys.tolist()}) nor the fill value "
            f"{fill_value}."
        )
    flat = codes.astype(np.int64, copy=False).ravel()
    missing = np.zeros(flat.shape, dtype=bool) if fill_value is None else flat == fill_value
    position = np.minimum(np.searchsorted(keys, flat), len(keys) - 1)
    unknown = (keys[position] != flat) & ~missing
    if unknown.any():
        raise ValueError(
            f"Code {flat[unknown][0]} is neither a class code ({keys.tolist()}) nor the fill "
            f"value {fill_value}."
        )
    out = labels[position].astype(dtype)
    if missing.any():
        out[missing] = fill
    return out.reshape(codes.shape)


def _equal(label, other):
    """Whether two labels are the same class (text never equals a number)."""
    if isinstance(label, str) != isinstance(other, str):
        return False
    return bool(label == other)


def adjust_output(func, spec, options):
    """``(func, spec)`` of :func:`sknd._inference._pixels.prepare` as the raster call asks.

    ``options["codes"]`` (a :class:`CodeTable`) turns labels into their codes;
    ``options["dtype"]`` sets the output type (float32 probabilities).
    """
    table = options.get("codes")
    if table is not None:
        func = ClassCodes(func, table.classes, table.dtype)
        spec.dtype, spec.fill = table.dtype, table.fill
    elif options.get("dtype") is not None:
        spec.dtype = np.dtype(options["dtype"])
    return func, spec
