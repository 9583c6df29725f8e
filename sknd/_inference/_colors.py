"""Class colours: the default palette and the colours a user gives, as RGBA tuples.

One reading of ``colors`` for every place that colours classes: the class maps'
GeoTIFF colour tables (:mod:`sknd.raster`), the scene command's ``--colors``
and the classes of a STAC MLM Item (``export_model("mlm", colors=...)``). A
colour is ``"#rrggbb"``, a colour name (matplotlib's: CSS names such as
``"forestgreen"``, ``"tab:blue"``) or an ``(R, G, B[, A])`` tuple of 0..255;
``colors`` is a sequence of them (one per class) or a dict ``{label: colour}``.
"""

import re

__all__ = []

# Colours of the first 20 classes (matplotlib's "tab20" order: strong, then light);
# further classes get colours spread around the hue circle.
_PALETTE = (
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
    (174, 199, 232), (255, 187, 120), (152, 223, 138), (255, 152, 150), (197, 176, 213),
    (196, 156, 148), (247, 182, 210), (199, 199, 199), (219, 219, 141), (158, 218, 229),
)  # fmt: skip


def default_colors(n):
    """``n`` distinct RGBA colours."""
    import colorsys

    colors = [rgb + (255,) for rgb in _PALETTE[:n]]
    for index in range(len(colors), n):
        hue = (index * 0.618033988749895) % 1.0  # golden ratio: well spread hues
        rgb = colorsys.hsv_to_rgb(hue, 0.65, 0.9 if index % 2 else 0.7)
        colors.append(tuple(int(round(255 * c)) for c in rgb) + (255,))
    return colors


def check_colors(colors, labels):
    """One RGBA tuple per label from None, a sequence, or a dict ``{label: colour}``."""
    if colors is None:
        return default_colors(len(labels))
    if isinstance(colors, dict):
        missing = [label for label in labels if label not in colors]
        if missing:
            raise ValueError(f"colors has no colour for the classes {missing}.")
        colors = [colors[label] for label in labels]
    colors = list(colors)
    if len(colors) != len(labels):
        raise ValueError(f"colors has {len(colors)} colours for {len(labels)} classes.")
    return [_rgba(color) for color in colors]


def _rgba(color):
    """An ``(R, G, B, A)`` tuple of 0..255 from such a tuple (A optional), ``"#rrggbb"`` or a
    colour name (matplotlib's: CSS names such as ``"forestgreen"``, ``"tab:blue"``)."""
    if isinstance(color, str):
        if re.fullmatch(r"#[0-9a-fA-F]{6}", color) is None:
            return _named(color)
        return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5)) + (255,)
    try:
        values = tuple(float(value) for value in color)
    except (TypeError, ValueError):
        values = ()
    if len(values) not in (3, 4) or not all(v.is_integer() and 0 <= v <= 255 for v in values):
        raise ValueError(
            f"A colour is an (R, G, B) tuple of integers 0..255 or '#rrggbb', got {color!r} "
            "(matplotlib's 0..1 floats: multiply them by 255)."
        )
    return tuple(int(v) for v in values) + (255,) * (4 - len(values))


def _named(color):
    """The RGBA colour of a colour name, by matplotlib."""
    try:
        from matplotlib.colors import to_rgba
    except ImportError:
        raise ValueError(
            f"Colour names such as {color!r} need matplotlib (pip install matplotlib); "
            "give the colour as '#rrggbb' or an (R, G, B) tuple."
        ) from None
    try:
        rgba = to_rgba(color)
    except ValueError:
        raise ValueError(
            f"A colour given as text is '#rrggbb' or a colour name (CSS or matplotlib, e.g. "
            f"'forestgreen'), got {color!r}."
        ) from None
    return tuple(int(round(255 * value)) for value in rgba[:3]) + (255,)
