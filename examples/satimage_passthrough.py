"""Raw-band passthrough: what normalized differences discard, and what it costs
============================================================================

A normalized difference ``(b_i - b_j) / (b_i + b_j)`` does not change when all
bands are multiplied by the same factor. That is what makes it robust to
illumination (sun angle, slope, haze), but it also throws away the overall
brightness of a pixel. On the UCI Statlog (Landsat) "satimage" data, using the
4 Landsat MSS bands of the centre pixel only, brightness matters: grey soil,
damp grey soil and very damp grey soil differ mostly by how dark they are. An
ND-only model then scores far below a logistic regression on the raw bands.

``passthrough=True`` feeds the raw bands, standardized with the training
mean and standard deviation (stored inside the network), to the dense layers
beside the ND outputs. It recovers the accuracy; the price is that the model is
no longer illumination-invariant. The last column of the printed table scores
every model on the test pixels darkened by 30% (a uniform illumination change):
the ND-only model does not move, the models that see raw bands do.

Data: UCI Statlog (Landsat Satellite), A. Srinivasan, DOI 10.24432/C55887,
CC BY 4.0; the original train/test split (4435/2000 pixels) is used.
"""

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier
from sknd.datasets import load_satimage
from sknd.plotting import pyplot


def load_centre_pixels(subset):
    """Centre-pixel bands (green, red, nir1, nir2) and labels of ``subset``."""
    X, y = load_satimage(subset=subset, center_pixel=True, return_X_y=True, as_frame=True)
    return X, y.to_numpy()


def main():
    X_train, y_train = load_centre_pixels("train")
    X_test, y_test = load_centre_pixels("test")
    darker = X_test * 0.7

    # The loader names the MSS bands green, red, nir1, nir2: the landsat_mss preset
    # knows them as B1-B4 (Landsat 4-5 numbering), so known indices get named.
    common = {"sensor": "landsat_mss", "max_epochs": 200, "patience": 30, "random_state": 0}
    models = {
        "logistic regression, raw bands": make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=2000)
        ),
        "NDClassifier (ND only)": NDClassifier(**common),
        "NDClassifier (passthrough=True)": NDClassifier(passthrough=True, **common),
    }
    rows = []
    for name, model in models.items():
        model.fit(X_train, y_train)
        rows.append(
            {
                "model": name,
                "test accuracy": model.score(X_test, y_test),
                "test accuracy, 30% darker": model.score(darker, y_test),
            }
        )
    scores = pd.DataFrame(rows)
    print(scores.to_string(index=False, float_format=lambda v: f"{v:.3f}"))

    plt = pyplot()  # matplotlib, or the command that installs it

    ax = scores.set_index("model").plot.barh(figsize=(7, 3.2), xlim=(0.4, 0.9))
    ax.set_xlabel("test accuracy")
    ax.set_ylabel("")
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    ax.figure.tight_layout()

    nd_only = models["NDClassifier (ND only)"]
    print("\nLearned indices of the ND-only model, most important first:")
    table = nd_only.indices_.sort_values("importance", ascending=False)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))

    with_raw = models["NDClassifier (passthrough=True)"]
    print("\nWith passthrough: importance of the indices vs the raw bands")
    print("  indices:  ", np.round(np.sort(with_raw.index_importances_)[::-1], 3))
    print(
        "  raw bands:",
        {
            name: round(float(value), 3)
            for name, value in zip(with_raw.band_names_, with_raw.passthrough_importances_)
        },
    )
    plt.show()


if __name__ == "__main__":
    main()
