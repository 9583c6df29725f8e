"""Forest type: band noise and illumination, learned indices against logistic regression
=====================================================================================

Nine ASTER bands (green, red, near infrared on three dates) of a forest in Japan, four
classes (Sugi, Hinoki, mixed deciduous, other). We fit a depth-2 ND network on the original
training split, compare it with logistic regression, and look at which learned normalized
differences it relies on: with several dates, indices across dates (change indices) can
matter as much as the classic red/NIR contrast.
"""

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier
from sknd.datasets import load_forest_type
from sknd.experiments import illumination_check, noise_robustness

X_train, y_train = load_forest_type(subset="train", return_X_y=True, as_frame=True)
X_test, y_test = load_forest_type(subset="test", return_X_y=True, as_frame=True)

nd = NDClassifier(depth=2, random_state=0).fit(X_train, y_train)
logreg = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X_train, y_train)
for label, model in (
    (f"ND network, depth 2 ({nd.n_parameters_} parameters)", nd),
    ("logistic regression on the bands", logreg),
):
    print(f"{label:>40}: test accuracy {model.score(X_test, y_test):.3f}")

# The most relevant learned indices, with their band weights softplus(a), softplus(c).
names = nd.feature_names_in_
weight_a, weight_c = np.logaddexp(0, nd.coef_a_), np.logaddexp(0, nd.coef_c_)
print("\nMost relevant learned indices (w_i b_i - w_j b_j) / (w_i b_i + w_j b_j):")
for k in np.argsort(-nd.index_importances_)[:5]:
    i, j = nd.pairs_[k]
    print(
        f"  {names[i]:>12} vs {names[j]:<12} weights {weight_a[k]:.2f} : {weight_c[k]:.2f}"
        f"  importance {nd.index_importances_[k]:.3f}"
    )

# Robustness: multiplicative band noise and a global illumination change.
curves = {}
for name, model in (("ND", nd), ("LogReg", logreg)):
    noise = (
        noise_robustness(model, X_test, y_test, levels=[0, 0.05, 0.1], n_repeats=5, random_state=0)
        .groupby("noise")["accuracy"]
        .mean()
    )
    curves[name] = noise
    light = illumination_check(model, X_test, y_test, factors=[0.5, 1.0, 2.0])
    print(
        f"\n{name}: accuracy at 0/5/10 % noise {noise.round(3).tolist()}, "
        f"predictions unchanged at k=0.5/2: {light['agreement'].iloc[[0, 2]].round(3).tolist()}"
    )

from sknd.plotting import pyplot  # noqa: E402

plt = pyplot()  # matplotlib, or the command that installs it

fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
for name, noise in curves.items():
    ax.plot(100 * noise.index, noise.to_numpy(), marker="o", label=name)
ax.set_xlabel("multiplicative band noise (%)")
ax.set_ylabel("test accuracy")
ax.legend()
plt.show()
