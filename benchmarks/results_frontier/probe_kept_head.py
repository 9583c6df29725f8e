"""Where the wide head is kept, and what it scores where it is not (benchmarks/RESULTS.md, "The
invariant frontier at the noise floor", "Which gaps are the folds'").

For each task, the default ``NDClassifier(random_state=fold)`` (``train_noise`` as given) is
fitted on the frontier's 10 stratified folds with ``sknd._training._wide_head.ALPHA`` set to
the given penalty; the one-standard-error rule that keeps the head
(``_wide_head.beats``) is watched, and with ``force`` overruled (the head always kept). Printed
per task: clean accuracy, the drop under three draws of the paper's 10 % multiplicative noise
(the frontier's draws) and in how many folds the rule kept the head.

Run on the checkout's tree: ``OMP_NUM_THREADS=1 PYTHONPATH=. python
benchmarks/results_frontier/probe_kept_head.py {watch,force} ALPHA TRAIN_NOISE TASK ...``
with TASK ``forest_type``, ``satimage_centre``, ``satimage_36`` or ``forest_type:K`` (class K
against the rest).
"""

import sys

import numpy as np
from sklearn.model_selection import StratifiedKFold

import sknd._training._wide_head as wh
from benchmarks.bench_noise_recipe import NOISE, tasks
from sknd import NDClassifier
from sknd.experiments import add_multiplicative_noise


def task(name):
    """Rows and classes of ``name`` (``data`` or ``data:K``, class K against the rest), as
    the frontier reads them."""
    data, _, label = name.partition(":")
    _, X, y = tasks(data, one_vs_rest=bool(label))[int(label or 0)]
    return X, y


def main():
    mode, alpha, train_noise, names = (
        sys.argv[1],
        float(sys.argv[2]),
        float(sys.argv[3]),
        sys.argv[4:],
    )
    rule, kept = wh.beats, []

    def beats(head, start, sample_weight):
        keep, words = rule(head, start, sample_weight)
        kept.append(keep)
        return (mode == "force" or keep), words

    wh.beats, wh.ALPHA = beats, alpha
    for name in names:
        X, y = task(name)
        clean, noisy, kept[:] = [], [], []
        folds = StratifiedKFold(10, shuffle=True, random_state=0).split(X, y)
        for fold, (train, test) in enumerate(folds):
            model = NDClassifier(train_noise=train_noise, random_state=fold).fit(X[train], y[train])
            clean.append(100 * model.score(X[test], y[test]))
            draws = [
                add_multiplicative_noise(X[test], NOISE, random_state=3 * fold + d)
                for d in range(3)
            ]
            noisy.append(np.mean([100 * model.score(X_noisy, y[test]) for X_noisy in draws]))
        print(
            f"{mode} alpha {alpha:g} train_noise {train_noise:g} {name}:"
            f" clean {np.mean(clean):.2f}, drop {np.mean(clean) - np.mean(noisy):.2f},"
            f" rule kept the head in {sum(kept)}"
            f" of {len(kept)} folds",
            flush=True,
        )


if __name__ == "__main__":
    main()
