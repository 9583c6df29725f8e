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

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from sknd import NDClassifier
from sknd.plotting import (
    plot_coefficient_matrix,
    plot_top_asymmetric_pairs,
    plot_training_curves,
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


def main(output_dir="."):
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    X, y = make_sentinel2_samples()
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    # Band names come from the DataFrame columns; sensor= maps them to common
    # names (B8 -> nir, B4 -> red, ...) and rejects names Sentinel-2 lacks.
    clf = NDClassifier(sensor="sentinel2", max_epochs=200, patience=30, random_state=0)
    clf.fit(X_train, y_train)
    print(f"test accuracy: {clf.score(X_test, y_test):.3f}\n")

    # One row per learned index; k = sp(a)/sp(c) is the weight of band_i
    # relative to band_j (1 = the classic symmetric index).
    top = clf.indices_.sort_values("importance", ascending=False).head(8)
    print("Most important learned indices:")
    print(top.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    for row in top.head(3).itertuples():
        name = row.known_index or "no classic index"
        i, j = row.band_i, row.band_j
        line = f"{i}/{j} ({name}): {i} weighted {row.k:.2f} x {j}"
        if row.known_index.startswith("-"):
            # A reversed pair is the classic index with the sign flipped and
            # the weighting inverted: N(B4, B8; k) = -N(B8, B4; 1/k).
            classic = row.known_index.split(",")[0][1:]
            line += f", i.e. minus {classic} with {j} weighted {1 / row.k:.2f} x {i}"
        print(line)

    print("\nEarth Engine expressions (image.expression(...)) of the top 3:")
    for formula in clf.export_formulas(format="gee", top=3, precision=4):
        print(" ", formula)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The paper's coefficient figure: top asymmetric pairs and ratio matrix.
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
    plot_top_asymmetric_pairs(clf, k=15, ax=left)
    plot_coefficient_matrix(clf, ax=right)
    fig.savefig(output_dir / "sentinel2_coefficients.png", dpi=80)

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    plot_training_curves(clf, ax=ax)
    fig.savefig(output_dir / "sentinel2_training_curves.png", dpi=80)
    print(f"\nfigures written to {output_dir}")


if __name__ == "__main__":
    main(*sys.argv[1:])
