"""Read and reuse learned indices: Sentinel-2 band names, known indices, GEE export
================================================================================

This example fits an :class:`~sknd.NDClassifier` on a DataFrame whose columns
are Sentinel-2 band names, prints the most important learned indices with the
classic index each band pair forms and the learned weighting ``k``, exports
them as Google Earth Engine expressions and draws the paper's coefficient
figures.

The reflectances are **synthetic**: four land covers (water, bare soil, a
healthy crop and a stressed crop) are drawn around rough textbook spectra,
mixed with soil and scaled by a random illumination factor per pixel
(shadows, slope), so that the example runs anywhere without downloads. The
numbers illustrate the workflow; they are not measurements.

Run it with ``python examples/sentinel2_indices.py [output_directory]``; the
figures are written as PNG files to the output directory (default: the
current directory).
"""

# The gallery shows each figure at full width, one below the other (sphinx-gallery):
# sphinx_gallery_multi_image = "single"

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from sknd import NDClassifier, NDRegressor
from sknd.plotting import (
    plot_coefficient_matrix,
    plot_top_asymmetric_pairs,
    plot_training_curves,
    pyplot,
)

# The ten 10 m and 20 m bands used in the paper.
BANDS = ["B2", "B3", "B4", "B5", "B6", "B7", "B8", "B8A", "B11", "B12"]

# Rough surface reflectance of each cover in those bands (illustrative values:
# vegetation is dark in blue and red, bright in NIR, with the red-edge rise
# between; stress lowers the NIR plateau and shifts the red edge; soil rises
# slowly towards the SWIR; water is dark beyond the green).
SPECTRA = {
    "water": [0.060, 0.055, 0.035, 0.025, 0.015, 0.012, 0.010, 0.009, 0.005, 0.003],
    "bare soil": [0.100, 0.140, 0.180, 0.205, 0.225, 0.240, 0.255, 0.265, 0.330, 0.280],
    "healthy crop": [0.030, 0.075, 0.040, 0.120, 0.300, 0.380, 0.420, 0.430, 0.200, 0.100],
    "stressed crop": [0.045, 0.085, 0.075, 0.140, 0.230, 0.270, 0.290, 0.300, 0.260, 0.170],
}


def make_sentinel2_samples(n_per_class=400, seed=0):
    """Synthetic Sentinel-2 reflectances of four covers, as a DataFrame."""
    rng = np.random.default_rng(seed)
    soil = np.array(SPECTRA["bare soil"])
    rows, labels = [], []
    for cover, spectrum in SPECTRA.items():
        spectrum = np.array(spectrum)
        # Fraction of the cover in the pixel, the rest being soil.
        fraction = rng.uniform(0.65, 1.0, (n_per_class, 1))
        if cover == "bare soil":
            fraction = np.ones((n_per_class, 1))
        # Each pixel's own spectrum varies by ~6% per band around the cover's.
        own = spectrum * rng.normal(1.0, 0.06, (n_per_class, len(BANDS)))
        mixed = fraction * own + (1 - fraction) * soil
        # A common brightness factor per pixel: illumination, slope, shadow.
        illumination = rng.uniform(0.5, 1.5, (n_per_class, 1))
        rows.append(np.clip(mixed * illumination, 1e-4, None))
        labels += [cover] * n_per_class
    X = pd.DataFrame(np.vstack(rows), columns=BANDS)
    return X, np.array(labels)


def make_wdrvi_target(X, alpha=0.2, seed=1):
    """A canopy variable linear in the WDRVI ``(alpha*B8 - B4) / (alpha*B8 + B4)``, with noise."""
    rng = np.random.default_rng(seed)
    wdrvi = (alpha * X["B8"] - X["B4"]) / (alpha * X["B8"] + X["B4"])
    return 3.0 + 4.0 * wdrvi + 0.05 * rng.standard_normal(len(X))


def print_indices(model, top=3):
    """The most important indices, and what the leading ones' weighting means."""
    table = model.indices_.sort_values("importance", ascending=False).head(top)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for row in table.itertuples():
        if abs(np.log(row.k)) < 0.05:  # within 5 % of the classic index
            continue
        name = row.known_index or "no classic index"
        line = (
            f"{row.band_i}/{row.band_j} ({name}): {row.band_i} weighted {row.k:.2f} x {row.band_j}"
        )
        if row.known_index.startswith("-"):
            # A reversed pair is the classic index with the sign flipped and the
            # weighting inverted: N(B4, B8; k) = -N(B8, B4; 1/k).
            classic = row.known_index.split(",")[0][1:]
            line += (
                f", i.e. minus {classic} with {row.band_j} weighted {1 / row.k:.2f} x {row.band_i}"
            )
        print(line)


def main(output_dir="."):
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    # 1. A target whose index is not the classic one: the Wide Dynamic Range
    #    Vegetation Index (Gitelson 2004), NDVI with the NIR band weighted 0.2, on the
    #    vegetated and bare pixels. Three candidate pairs, named by band.
    X, labels = make_sentinel2_samples()
    land = labels != "water"
    X_land = X[land].reset_index(drop=True)
    target = make_wdrvi_target(X_land)
    X_train, X_test, t_train, t_test = train_test_split(X_land, target, random_state=0)
    pairs = [("B8", "B4"), ("B8", "B11"), ("B3", "B8")]
    reg = NDRegressor(sensor="sentinel2", pairs=pairs, random_state=0).fit(X_train, t_train)
    print(f"WDRVI target: test R2 {reg.score(X_test, t_test):.4f}, ", end="")
    print(f"learning_gain_ {reg.learning_gain_:+.4f} (validation R2 over the classic indices)")
    print_indices(reg)
    paper = NDRegressor(sensor="sentinel2", pairs=pairs, recipe="paper", random_state=0)
    paper.fit(X_train, t_train)
    print(
        f'recipe="paper": test R2 {paper.score(X_test, t_test):.4f}, k of the three pairs:',
        ", ".join(f"{k:.2f}" for k in paper.indices_["k"]),
    )

    # 2. Four land covers, all 45 band pairs: classes that thresholds on classic
    #    indices separate. The default recipe keeps every k at 1.
    X_train, X_test, y_train, y_test = train_test_split(
        X, labels, test_size=0.3, stratify=labels, random_state=0
    )
    clf = NDClassifier(sensor="sentinel2", max_epochs=200, patience=30, random_state=0)
    clf.fit(X_train, y_train)  # X_train: columns B2 B3 B4 B5 B6 B7 B8 B8A B11 B12
    print(f"\nland cover: test accuracy {clf.score(X_test, y_test):.3f}, ", end="")
    print(f"learning_gain_ {clf.learning_gain_:+.3f}, largest |log k| ", end="")
    print(f"{np.abs(np.log(clf.indices_['k'])).max():.3f}")
    print_indices(clf)

    print("\nEarth Engine expression (image.expression(...)) of the WDRVI model's index:")
    print(" ", reg.export_formulas(format="gee", top=1, precision=4)[0])

    plt = pyplot()  # matplotlib, or the command that installs it
    plt.switch_backend("Agg")

    # The paper's coefficient figure for the WDRVI model: the pairs by asymmetry
    # and the ratio matrix (red: band i upweighted, blue: band j upweighted).
    # Sized for the width of a page, at which its labels stay legible.
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 4.6), layout="constrained")
    plot_top_asymmetric_pairs(reg, k=3, ax=left)
    plot_coefficient_matrix(reg, ax=right)
    fig.savefig(output_dir / "sentinel2_coefficients.png", dpi=100)

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    plot_training_curves(reg, ax=ax)
    fig.savefig(output_dir / "sentinel2_training_curves.png", dpi=100)
    print("\nfigures written to the output directory: sentinel2_coefficients.png and")
    print("sentinel2_training_curves.png")


if __name__ == "__main__":
    main(*sys.argv[1:])
