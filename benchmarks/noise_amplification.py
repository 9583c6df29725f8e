"""How much additive band noise the classic normalized differences amplify (issue 22, item 6).

Run: ``PYTHONPATH=. python benchmarks/noise_amplification.py``

Additive noise of 10 % of each band's standard deviation (clipped at 0, as
``python -m sknd.experiments --noise-kind additive`` draws it) has a noise-to-signal ratio of
0.1 on every band. A normalized difference ``(b_i - b_j) / (b_i + b_j)`` of two correlated
bands varies little over the data, while the noise of both bands reaches it: its ratio of
the index's change under noise to the index's spread over the data can be several times
the bands'. Every model on the indices then sees noisier features than a model on the bands,
whatever it learns: the fixed-index logistic regression loses as much under this noise as
the ND networks. Printed per data set: the bands' ratio and the indices' median, largest
and smallest, and the pairs with the largest.
"""

import numpy as np

from sknd._nd._formula import classic_index
from sknd.datasets import load_forest_type, load_satimage
from sknd.experiments import add_additive_noise
from sknd.nn import all_pairs

DATASETS = {
    "forest_type": lambda: load_forest_type(return_X_y=True, as_frame=True),
    "satimage_centre": lambda: load_satimage(return_X_y=True, as_frame=True, center_pixel=True),
}
LEVEL = 0.10


def main():
    for name, load in DATASETS.items():
        frame, _ = load()
        X = frame.to_numpy(dtype=np.float64)
        pairs = all_pairs(X.shape[1])
        noisy = add_additive_noise(X, LEVEL, random_state=0)
        bands = (noisy - X).std(axis=0) / X.std(axis=0)
        index = classic_index(X, pairs, epsilon=1e-6)
        change = classic_index(noisy, pairs, epsilon=1e-6) - index
        ratio = change.std(axis=0) / index.std(axis=0)
        worst = np.argsort(ratio)[::-1][:3]
        names = frame.columns
        print(
            f"{name}: bands {bands.mean():.3f}; indices median {np.median(ratio):.3f}, "
            f"largest {ratio.max():.3f}, smallest {ratio.min():.3f}; largest: "
            + ", ".join(
                f"({names[pairs[k][0]]}, {names[pairs[k][1]]}) {ratio[k]:.3f}" for k in worst
            )
        )


if __name__ == "__main__":
    main()
