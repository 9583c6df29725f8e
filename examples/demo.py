"""The demo: NDClassifier against the paper's MLP on forest type (make demo)
=========================================================================

Fits :class:`sknd.NDClassifier` on the UCI forest-type dataset (9 ASTER bands: green, red
and NIR on three dates; CC BY 4.0, shipped with sknd), prints its test accuracy next to the
paper's MLP baseline with the same training settings (the default ``depth="auto"`` picks
depth 2 or 3 on the validation part; ``depth_`` says which), and lists the most important learned
indices with their band weighting ``k = softplus(a) / softplus(c)`` and the classic index each
band pair forms, if any.

Run with ``python examples/demo.py`` (``make demo`` installs what it needs first).
"""

import time

from sklearn.model_selection import train_test_split

from sknd import NDClassifier
from sknd.datasets import load_forest_type

data = load_forest_type(as_frame=True)  # DataFrame columns name the bands
X_train, X_test, y_train, y_test = train_test_split(
    data.data, data.target, test_size=0.3, stratify=data.target, random_state=0
)
print(
    f"UCI forest type: {len(data.data)} samples, {X_train.shape[1]} ASTER bands, "
    f"{len(data.target_names)} classes ({', '.join(data.target_names)})\n"
)

models = {}
for architecture in ("nd", "mlp"):
    start = time.perf_counter()
    model = NDClassifier(architecture=architecture, random_state=0).fit(X_train, y_train)
    seconds = time.perf_counter() - start
    models[architecture] = model
    print(
        f"{architecture.upper():>4}: test accuracy {model.score(X_test, y_test):.3f}  "
        f"(depth {model.depth_}, {model.n_parameters_:,} parameters, {model.n_iter_} epochs, "
        f"{seconds:.1f} s)"
    )

table = models["nd"].indices_.sort_values("importance", ascending=False).head(5)
print("\nTop learned indices (k = weight of band_i relative to band_j; k = 1: the classic index)")
print(table[["band_i", "band_j", "k", "importance", "known_index"]].round(3).to_string(index=False))
