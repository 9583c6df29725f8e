"""Forest type across three dates: change indices and text formulas
================================================================

Nine ASTER bands (green, red and near infrared on three dates: September
2010, March 2011, May 2011) of a forested area in Japan, labelled sugi,
hinoki, mixed deciduous or other. Band names such as ``nir_sep10`` carry
their common name and a date tag; sknd reads the tag as the band's *group*,
so only same-date pairs are called NDVI, GNDVI, ... while cross-date pairs
(e.g. ``nir_mar11 / nir_may11``, a change index) have no classic name.

Data: UCI "Forest type mapping", B. Johnson, DOI 10.24432/C5SP4V, CC BY 4.0;
Johnson, Tateishi & Xie (2012), Remote Sensing Letters 3(6), 491-499. The
original split (198 training, 325 test rows) is used.
"""

from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier
from sknd.datasets import load_forest_type
from sknd.plotting import pyplot


def load(subset):
    """Band values (columns such as ``nir_sep10``) and class letters of ``subset``."""
    bunch = load_forest_type(subset=subset, as_frame=True)
    return bunch.data, bunch.target_codes[bunch.target.to_numpy()]


def main():
    X_train, y_train = load("train")
    X_test, y_test = load("test")

    baseline = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    baseline.fit(X_train, y_train)
    clf = NDClassifier(max_epochs=300, patience=40, batch_size=16, random_state=0)
    clf.fit(X_train, y_train)
    print(f"logistic regression, raw bands: {baseline.score(X_test, y_test):.3f}")
    print(f"NDClassifier:                   {clf.score(X_test, y_test):.3f}\n")

    print("Top learned indices:")
    top = clf.indices_.sort_values("importance", ascending=False).head(8)
    print(top.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nAs text formulas:")
    for formula in clf.export_formulas(format="text", top=3, precision=3):
        print(" ", formula)

    plt = pyplot()  # matplotlib, or the command that installs it

    names = [f"{row.band_i} / {row.band_j}" for row in top.itertuples()]
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    ax.barh(names[::-1], top["importance"].to_numpy()[::-1])
    ax.set_xlabel("importance (outgoing weight norm x index spread)")
    ax.set_title("Most important learned indices")
    plt.show()


if __name__ == "__main__":
    main()
