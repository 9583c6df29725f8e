"""Labels of the coefficient figures never overlap, for 4 to 250 bands.

Each figure is rendered with the Agg backend at the size the code chooses; the bounding
boxes of the visible tick labels of every axis (colour bars included) must be disjoint,
and, from hyperspectral band counts on, those of every Axes' texts (tick labels, axis
labels, title), which stay inside the figure.
"""

from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from sknd.experiments._figures import plot_coefficients  # noqa: E402
from sknd.plotting import plot_coefficient_matrix, plot_top_asymmetric_pairs  # noqa: E402

BAND_COUNTS = range(4, 41)
# A wide and a narrow spread of learned ratios k (the tick labels differ: "1/1.1" vs "1/16").
SCALES = {"narrow": 0.15, "wide": 3.0}


@pytest.fixture
def plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def fake_model(n_bands, scale, long_names):
    """What the plotting functions read from a fitted estimator, with random ratios."""
    rng = np.random.default_rng(n_bands)
    pairs = np.array([(i, j) for i in range(n_bands) for j in range(i + 1, n_bands)])
    names = (
        [f"band_{i}_sep10" for i in range(n_bands)]
        if long_names
        else [f"B{i + 1}" for i in range(n_bands)]
    )
    return SimpleNamespace(
        n_features_in_=n_bands,
        bands=names,
        sensor=None,
        pairs_=pairs,
        coef_a_=rng.normal(0.0, scale, len(pairs)),
        coef_c_=rng.normal(0.0, scale, len(pairs)),
        index_importances_=rng.uniform(size=len(pairs)),
        epsilon=1e-6,
        variant="reflectance",
    )


def tick_labels(axis, renderer):
    """(text, rendered box) of the axis' visible tick labels."""
    boxes = []
    for tick in axis.get_major_ticks():
        label = tick.label1 if tick.label1.get_visible() else tick.label2
        if tick.get_visible() and label.get_visible() and label.get_text():
            boxes.append((label.get_text(), label.get_window_extent(renderer)))
    return boxes


def overlapping(boxes):
    """Pairs of (text, box) whose boxes intersect: touching is fine, a shared area of more
    than half a pixel is not."""
    found = []
    for (text_a, a), (text_b, b) in combinations(boxes, 2):
        width = min(a.x1, b.x1) - max(a.x0, b.x0)
        height = min(a.y1, b.y1) - max(a.y0, b.y0)
        if width > 0.5 and height > 0.5:
            found.append((text_a, text_b))
    return found


def overlapping_tick_labels(fig):
    """Pairs of visible tick labels (per axis) whose rendered boxes intersect."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [
        pair
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        for pair in overlapping(tick_labels(axis, renderer))
    ]


def axes_texts(fig):
    """(text, box) of every Axes' tick labels, axis labels and title, one list per Axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = []
    for ax in fig.axes:
        boxes = tick_labels(ax.xaxis, renderer) + tick_labels(ax.yaxis, renderer)
        for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if text.get_visible() and text.get_text():
                boxes.append((text.get_text(), text.get_window_extent(renderer)))
        texts.append(boxes)
    return texts


@pytest.mark.parametrize("n_bands", BAND_COUNTS)
def test_coefficient_figures_have_no_overlapping_tick_labels(plt, n_bands):
    # Every band count; the ratio spread and the name length alternate between counts.
    scale = SCALES["narrow"] if n_bands % 2 else SCALES["wide"]
    model = fake_model(n_bands, scale, long_names=(n_bands // 2) % 2 == 0)
    figures = {
        "plot_coefficient_matrix": plot_coefficient_matrix(model).figure,
        "plot_top_asymmetric_pairs": plot_top_asymmetric_pairs(model).figure,
        "experiments plot_coefficients": plot_coefficients(model),
    }
    problems = {
        name: overlaps[:3]
        for name, fig in figures.items()
        if (overlaps := overlapping_tick_labels(fig))
    }
    assert not problems, problems


def test_every_band_is_labelled_when_there_is_room(plt):
    model = fake_model(9, SCALES["wide"], long_names=True)
    ax = plot_coefficient_matrix(model)
    ax.figure.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == model.bands
    assert [t.get_text() for t in ax.get_yticklabels()] == model.bands


@pytest.mark.parametrize("n_bands", [4, 36, 250])
def test_figures_stay_readable_up_to_250_bands(plt, n_bands):
    # Wavelengths as names, as a lab spectrometer's bands are named.
    model = fake_model(n_bands, SCALES["wide"], long_names=False)
    model.bands = [f"{400 + 2 * i} nm" for i in range(n_bands)]
    matrix = plot_coefficient_matrix(model)
    figures = {
        "plot_coefficient_matrix": matrix.figure,
        "plot_top_asymmetric_pairs": plot_top_asymmetric_pairs(model).figure,
        "plot_top_asymmetric_pairs, k=40": plot_top_asymmetric_pairs(model, k=40).figure,
        "experiments plot_coefficients": plot_coefficients(model),
    }
    for name, fig in figures.items():
        texts = axes_texts(fig)
        overlaps = [pair for boxes in texts for pair in overlapping(boxes)]
        assert not overlaps, (name, overlaps[:3])
        inside = fig.bbox.padded(1.0)
        outside = [
            text
            for boxes in texts
            for text, box in boxes
            if not inside.contains(box.x0, box.y0) or not inside.contains(box.x1, box.y1)
        ]
        assert not outside, (name, outside[:3])
        assert max(fig.get_size_inches()) <= 20, name  # a page, not a poster
    # The matrix labels every band while they fit, else evenly spaced bands, a few dozen.
    labelled = [t.get_text() for t in matrix.get_xticklabels() if t.get_text()]
    assert len(labelled) == n_bands if n_bands <= 12 else 10 <= len(labelled) <= 40
