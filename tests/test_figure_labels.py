"""Tick labels of the coefficient figures never overlap, for 4 to 40 bands.

Each figure is rendered with the Agg backend at the size the code chooses; the bounding
boxes of the visible tick labels of every axis (colour bars included) must be disjoint.
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


def overlapping_tick_labels(fig):
    """Pairs of visible tick labels (per axis) whose rendered boxes intersect."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            boxes = []
            for tick in axis.get_major_ticks():
                label = tick.label1 if tick.label1.get_visible() else tick.label2
                if not (tick.get_visible() and label.get_visible() and label.get_text()):
                    continue
                boxes.append((label.get_text(), label.get_window_extent(renderer)))
            for (text_a, a), (text_b, b) in combinations(boxes, 2):
                # Touching boxes are fine; a shared area of more than half a pixel is not.
                width = min(a.x1, b.x1) - max(a.x0, b.x0)
                height = min(a.y1, b.y1) - max(a.y0, b.y0)
                if width > 0.5 and height > 0.5:
                    found.append((text_a, text_b))
    return found


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
