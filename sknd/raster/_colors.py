"""Class colours as the scene command takes them: ``--colors`` as a list or a colour-table file.

``--colors water=#1f78b4,soil=tan`` names a colour per class (``#rrggbb`` or
a colour name, :func:`~sknd._inference._colors.check_colors`). ``--colors FILE``
reads a colour table as GIS tools write them, one class a line:

- QGIS's exported colour map (paletted / unique values renderer, "Export Color
  Map to File"): ``value,R,G,B,A,label`` after its ``#`` comment and
  ``INTERPOLATION:`` lines;
- GDAL's colour-table text (``gdaldem color-relief``'s, ``gdalattachpct``'s):
  ``value R G B [A] [label]``, separated by spaces, tabs, commas or colons.

A line's class is its label where that is the name of a class, else its value
read as a class label (the model's ``classes_``; codes, which the map stores,
are positions among them and are not what a user knows). Classes a table
leaves out keep the default colours.
"""

import os
import re

from .._inference._colors import check_colors, default_colors

__all__ = []


def command_colors(option, labels):
    """One RGBA colour per class of ``labels`` from the ``--colors`` option.

    Raises ``ValueError`` naming what does not fit (an unknown class, a bad line).
    """
    if os.path.isfile(option):
        given = _table_colors(option, [str(label) for label in labels])
    else:
        given = {}
        for item in filter(None, (part.strip() for part in option.split(","))):
            name, sep, color = item.partition("=")
            if not sep or not name.strip() or not color.strip():
                raise ValueError(
                    f"--colors {option!r}: give CLASS=COLOUR pairs (e.g. water=#1f78b4,"
                    "soil=tan) or a colour-table file (QGIS's exported colour map, GDAL's "
                    "'value R G B [A] [label]' text), which does not exist by that name"
                )
            given[name.strip()] = color.strip()
    labels = [str(label) for label in labels]
    colors = dict(zip(labels, default_colors(len(labels))))
    unknown = [name for name in given if name not in colors]
    if unknown:
        raise ValueError(
            f"--colors names {unknown}, which are no classes of the model: its classes are {labels}"
        )
    colors.update(given)
    return check_colors(colors, labels)


def _table_colors(path, labels):
    """``{class: (R, G, B[, A])}`` of the colour table ``path`` for the classes ``labels``
    (strings): a line's label where it is one of them, else its value. Raises ``ValueError``
    naming the line, its label and its value where neither is a class."""
    given = {}
    for number, value, label, rgb in _table(path):
        name = label if label in labels else value
        if name not in labels:
            what = (
                f"neither its label {label!r} nor its value {value!r} is a class of the model"
                if label
                else f"its value {value!r} is no class of the model (the line has no label)"
            )
            raise ValueError(
                f"the colour table {path!r}, line {number}: {what}: its classes are {labels}"
            )
        given[name] = rgb
    return given


def _table(path):
    """``(line number, value, label, (R, G, B[, A]))`` of each line of a QGIS or GDAL colour
    table."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the colour table {path!r}: {exc}") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#") or line.upper().startswith("INTERPOLATION"):
            continue
        fields = [field for field in re.split(r"[,\s:]+", line) if field]
        values = fields[1:5]
        rgb = [value for value in values if re.fullmatch(r"\d{1,3}", value)]
        if len(rgb) < 3:
            raise ValueError(
                f"the colour table {path!r}, line {number}: {line!r} is not 'value R G B "
                "[A] [label]' (GDAL) or 'value,R,G,B,A,label' (QGIS)"
            )
        label = " ".join(fields[1 + len(rgb) :])
        rows.append((number, fields[0], label, tuple(int(value) for value in rgb)))
    return rows
