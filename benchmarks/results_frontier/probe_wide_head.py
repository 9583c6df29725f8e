"""Probes of the wide head's schedule (benchmarks/RESULTS.md, "The invariant frontier at the
noise floor"): one variant of ``sknd/_training/_wide_head.py``'s module settings, the
default ``NDClassifier(random_state=fold)`` fitted on each of the first ``n_folds`` of
``folds`` stratified folds, clean accuracy and the mean under three draws of the paper's
10 % multiplicative noise, appended to ``/tmp/probe_results.csv``.

The settings it sets exist only with ``wide_head_probes.patch`` (beside this file) applied
to commit 8a1e638 (``git worktree add /tmp/pt 8a1e638 && git -C /tmp/pt apply ...``):
``ALPHAS`` (a path of L2 penalties, strongest first, chosen by the one-standard-error
rule), ``WARM`` (each candidate starts at the last), ``MIX`` (``"alternate"``: the rows and a
noisy copy in turn, today's; ``"mix2"``: the rows and two noisy copies in every epoch;
``"cycle3"``: rows, copy, copy), ``MAX_EPOCHS``, ``PATIENCE``, ``STOP`` (``"train"``: no
validation stop, until the training loss stalls as scikit-learn's MLP stops), ``BEATS_SE``
(False: the head kept where its mean validation loss is lower, without the standard-error
margin), ``CLASSIC`` (the head on the classic indices; it changed no fit) and ``CANDS``
(candidates ``(alpha, stop, max_epochs)`` trained apart and chosen by the same rule).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=/tmp/pt python probe_wide_head.py NAME 'JSON' DATA FOLDS
[N_FOLDS]`` with DATA ``forest``, ``forest:`` (its four class-vs-rest tasks), ``centre`` or
``sat36``; JSON the settings, ``{"_params": {...}}`` estimator parameters
(``passthrough``, ``train_noise``). Per-fold rows of the runs: ``wide_head_probes.csv``.
"""

import json
import sys
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold

import sknd._training._wide_head as wh
from sknd import NDClassifier
from sknd.datasets import load_forest_type, load_satimage
from sknd.experiments import add_multiplicative_noise

variant = sys.argv[1]
settings = json.loads(sys.argv[2])
data = sys.argv[3]
folds = int(sys.argv[4])
nf = int(sys.argv[5]) if len(sys.argv) > 5 else folds
extra = settings.pop("_params", {})
for k, v in settings.items():
    setattr(wh, k, tuple(v) if isinstance(v, list) else v)
D = {
    "forest": lambda: load_forest_type(return_X_y=True),
    "centre": lambda: load_satimage(return_X_y=True, center_pixel=True),
    "sat36": lambda: load_satimage(return_X_y=True),
}
base = data.split(":")[0]
X, y = D[base]()
X = np.asarray(X, float)
y = np.asarray(y)
tasks = (
    [(data, y)]
    if ":" not in data
    else [(f"{base}:{label}", (y == label).astype(int)) for label in np.unique(y)]
)
out = open("/tmp/probe_results.csv", "a")
for tname, yy in tasks:
    for fold, (tr, te) in enumerate(
        StratifiedKFold(folds, shuffle=True, random_state=0).split(X, yy)
    ):
        if fold >= nf:
            break
        noisy = [add_multiplicative_noise(X[te], 0.1, random_state=3 * fold + d) for d in range(3)]
        t = time.process_time()
        m = NDClassifier(random_state=fold, **extra).fit(X[tr], yy[tr])
        sec = time.process_time() - t
        clean = 100 * m.score(X[te], yy[te])
        nz = 100 * np.mean([m.score(n, yy[te]) for n in noisy])
        print(
            f"{variant},{tname},{fold},{clean:.3f},{nz:.3f},{sec:.2f},{m.depth_}",
            file=out,
            flush=True,
        )
