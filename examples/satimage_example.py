"""Learned spectral indices on the UCI Statlog (Landsat Satellite) dataset
=======================================================================

Six land-cover classes from 3 x 3 neighbourhoods of Landsat MSS pixels (4 bands: green, red
and two near-infrared bands). We use the 4 bands of the centre pixel (6 band pairs) so the
learned indices are easy to read, fit a depth-3 ND network on the original training split
and compare it with an MLP of the same depth and with a random forest. Pass
``center_pixel=False`` to ``load_satimage`` for all 36 features (630 pairs; slower).

The ND network's predictions do not change with brightness, the others' do; the price is
accuracy on this dataset, whose soil classes differ mostly in brightness (see
``examples/satimage_passthrough.py`` for the raw-band passthrough trade-off and
``docs/experiments.md`` for the cross-validated numbers).
"""

import numpy as np
from sklearn.ensemble import RandomForestClassifier

from sknd import NDClassifier
from sknd.datasets import load_satimage
from sknd.experiments import illumination_check

train = load_satimage(subset="train", center_pixel=True, as_frame=True)
test = load_satimage(subset="test", center_pixel=True, as_frame=True)
print("Statlog (Landsat Satellite), classes:", ", ".join(train.target_names))

models = {
    "ND (depth 3)": NDClassifier(depth=3, architecture="nd", random_state=0),
    "MLP (depth 3)": NDClassifier(depth=3, architecture="mlp", random_state=0),
    "random forest": RandomForestClassifier(random_state=0),
}
for name, model in models.items():
    model.fit(train.data, train.target)
    light = illumination_check(model, test.data, test.target, factors=[0.8, 1.0, 1.25])
    print(
        f"{name:>14}: test accuracy {model.score(test.data, test.target):.3f}, "
        f"predictions unchanged at 0.8x / 1.25x brightness: "
        f"{light['agreement'].iloc[0]:.3f} / {light['agreement'].iloc[2]:.3f}"
    )

nd = models["ND (depth 3)"]
ratio = np.logaddexp(0, nd.coef_a_) / np.logaddexp(0, nd.coef_c_)
print("\nLearned band weight ratios sp(a)/sp(c) (1 = the classic normalized difference):")
for (i, j), r in zip(nd.pairs_, ratio):
    print(f"  ND({train.feature_names[i]}, {train.feature_names[j]}): {r:.2f}")

from sknd.plotting import pyplot  # noqa: E402

plt = pyplot()  # matplotlib, or the command that installs it

fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
labels = [f"{train.feature_names[i]} / {train.feature_names[j]}" for i, j in nd.pairs_]
ax.plot(ratio[::-1], labels[::-1], "o")
ax.axvline(1.0, color="black", linewidth=0.8)
ax.set_xlabel("learned sp(a) / sp(c) (1: the classic index)")
plt.show()
