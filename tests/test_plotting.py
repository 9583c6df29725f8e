"""Render every figure of sknd.plotting with the Agg backend."""

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sknd import plotting
from sknd.plotting import (
    plot_coefficient_matrix,
    plot_noise_robustness,
    plot_top_asymmetric_pairs,
    plot_training_curves,
)

S2 = ["B2", "B3", "B4", "B5", "B6", "B7", "B8", "B8A", "B11", "B12"]


@pytest.fixture
def plt():
    """pyplot on the non-interactive Agg backend; figures closed afterwards."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib import pyplot

    yield pyplot
    pyplot.close("all")


def softplus(x):
    return np.log1p(np.exp(x))


def stand_in(n_bands=None, seed=0, pairs=None):
    n_bands = len(S2) if n_bands is None else n_bands
    rng = np.random.default_rng(seed)
    if pairs is None:
        pairs = [(i, j) for i in range(n_bands) for j in range(i + 1, n_bands)]
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    epochs = np.arange(1, 21)
    return SimpleNamespace(
        n_features_in_=n_bands,
        bands=S2[:n_bands],
        sensor="sentinel2",
        epsilon=1e-6,
        variant="reflectance",
        pairs_=pairs,
        coef_a_=rng.normal(0, 1, len(pairs)),
        coef_c_=rng.normal(0, 1, len(pairs)),
        index_importances_=rng.uniform(size=len(pairs)),
        history_=pd.DataFrame(
            {
                "epoch": epochs,
                "train_loss": 1 / epochs,
                "valid_loss": 1.2 / epochs + 0.01 * epochs,
                "valid_score": 1 - 1 / (epochs + 1),
            }
        ),
        best_epoch_=11,
    )


def test_coefficient_matrix_colours_follow_the_weighting(plt):
    model = stand_in(n_bands=3, pairs=[(0, 1), (0, 2), (1, 2)])
    model.coef_a_ = np.array([1.0, 0.0, -2.0])
    model.coef_c_ = np.array([0.0, 0.0, 0.0])
    fig, ax = plt.subplots()
    assert plot_coefficient_matrix(model, ax=ax, annotate=True) is ax
    image = ax.get_images()[0]
    data = image.get_array()
    assert data.shape == (3, 3)
    assert data.mask[1, 0] and data.mask[0, 0]  # lower triangle and diagonal blank
    np.testing.assert_allclose(data[0, 1], np.log2(softplus(1.0) / softplus(0.0)))
    red = image.cmap(image.norm(data[0, 1]))
    blue = image.cmap(image.norm(data[1, 2]))
    assert red[0] > red[2] and blue[2] > blue[0]  # red: band i upweighted
    assert np.allclose(image.cmap(image.norm(0.0))[:3], 1.0, atol=0.05)  # white at k=1
    assert [t.get_text() for t in ax.get_yticklabels()] == ["B2", "B3", "B4"]
    fig.canvas.draw()


def test_coefficient_matrix_mirror_and_new_figure(plt):
    model = stand_in()
    ax = plot_coefficient_matrix(model, mirror=True, colorbar=False)
    data = ax.get_images()[0].get_array()
    np.testing.assert_allclose(data[3, 1], -data[1, 3])
    assert data.mask.sum() == len(S2)  # only the diagonal is blank
    ax.figure.canvas.draw()


def test_top_asymmetric_pairs(plt):
    model = stand_in()
    ax = plot_top_asymmetric_pairs(model, k=15)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 15 and len(ax.patches) == 15
    widths = np.array([patch.get_width() for patch in ax.patches])
    assert np.all(np.diff(np.abs(widths)) <= 1e-12)  # most asymmetric first
    with pytest.raises(ValueError):
        plot_top_asymmetric_pairs(model, k=0)
    ax.figure.canvas.draw()


def test_top_asymmetric_pairs_names_known_indices(plt):
    model = stand_in(n_bands=len(S2))
    ax = plot_top_asymmetric_pairs(model, k=len(model.pairs_))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "B8 : B4  (NDVI)" in labels or "B4 : B8  (-NDVI)" in labels


def test_training_curves(plt):
    model = stand_in()
    fig, ax = plt.subplots()
    assert plot_training_curves(model, ax=ax) is ax
    assert len(ax.get_lines()) == 3  # two losses and the best-epoch marker
    assert len(fig.axes) == 2  # validation score on a twin axis
    # Without a validation set the valid_* columns are NaN and are not drawn.
    model.history_[["valid_loss", "valid_score"]] = np.nan
    model.best_epoch_ = None
    fig, ax = plt.subplots()
    plot_training_curves(model, ax=ax)
    assert len(ax.get_lines()) == 1 and len(fig.axes) == 1
    fig.canvas.draw()


def test_training_curves_legend_covers_no_curve(plt):
    # The legend sits above the plot (the validation score, on the twin Axes, may run
    # anywhere inside it), below the title.
    ax = plot_training_curves(stand_in())
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert len(ax.get_legend().get_texts()) == 4
    assert legend.y0 >= ax.get_window_extent(renderer).y1 - 1
    assert legend.y1 <= ax.title.get_window_extent(renderer).y0 + 1
    assert ax.figure.bbox.contains(legend.x0, legend.y0) and ax.figure.bbox.contains(
        legend.x1, legend.y1
    )


def test_noise_robustness(plt):
    rows = [
        {"noise": noise, "accuracy": acc - slope * noise + 0.001 * fold, "model": name}
        for name, acc, slope in [("ND", 0.96, 0.02), ("MLP", 0.97, 0.3)]
        for noise in [0.0, 0.02, 0.05, 0.1]
        for fold in range(3)
    ]
    ax = plot_noise_robustness(pd.DataFrame(rows))
    assert [line.get_label() for line in ax.get_lines()] == ["ND", "MLP"]
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), [0.0, 0.02, 0.05, 0.1])
    assert len(ax.collections) == 2  # spread across folds
    ax.figure.canvas.draw()
    single = pd.DataFrame({"noise": [0, 5, 10], "accuracy": [0.9, 0.8, 0.7]})
    ax = plot_noise_robustness(single)
    assert len(ax.get_lines()) == 1 and ax.get_legend() is None
    with pytest.raises(ValueError, match="accuracy.*y="):
        plot_noise_robustness(pd.DataFrame({"noise": [0.0]}))
    with pytest.raises(TypeError):
        plot_noise_robustness([(0.0, 0.9)])


def test_noise_robustness_of_a_regressor(plt):
    # A regressor's scores (noise_robustness, results.csv) are r2 and rmse: no accuracy.
    from sklearn.datasets import make_regression
    from sklearn.linear_model import Ridge

    from sknd.experiments import noise_robustness

    X, y = make_regression(n_samples=60, n_features=4, random_state=0)
    X = np.abs(X)
    scores = noise_robustness(Ridge().fit(X, y), X, y, levels=[0.0, 0.1], n_repeats=2)
    ax = plot_noise_robustness(scores)
    assert ax.get_ylabel() == "R²" and ax.get_title() == "R² under input noise"
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), scores.groupby("noise").r2.mean())
    ax = plot_noise_robustness(scores, y="rmse")
    assert ax.get_ylabel() == "RMSE"


def test_models_without_nd_layer_or_history(plt):
    model = stand_in(pairs=np.empty((0, 2)))
    with pytest.raises(ValueError, match="no normalized-difference layer"):
        plot_coefficient_matrix(model)
    with pytest.raises(ValueError, match="no normalized-difference layer"):
        plot_top_asymmetric_pairs(model)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        plot_training_curves(SimpleNamespace())


def test_missing_matplotlib_names_the_extra(plt, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    # Commands that work: sknd is not on PyPI, its extra installs from the checkout.
    works = r"pip install matplotlib .*pip install -e [\"']\.\[plot\][\"']"
    with pytest.raises(ImportError, match=works):
        plot_coefficient_matrix(stand_in())
    with pytest.raises(ImportError, match=works):
        plotting.plot_noise_robustness(pd.DataFrame({"noise": [0.0], "accuracy": [1.0]}))


def test_examples_import_matplotlib_through_pyplot(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install -e [\"']\.\[plot\][\"']"):
        plotting.pyplot()
    # The examples ask sknd.plotting.pyplot() for matplotlib, so that a missing matplotlib
    # says how to install it; a direct import would raise a bare ModuleNotFoundError.
    examples = Path(__file__).resolve().parents[1] / "examples"
    direct = [
        path.name
        for path in sorted(examples.glob("*.py"))
        if re.search(r"^\s*(import matplotlib\b|import matplotlib\.pyplot)", path.read_text(), re.M)
    ]
    assert not direct, f"examples importing matplotlib directly: {direct}"
