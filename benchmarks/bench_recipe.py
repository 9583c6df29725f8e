"""Training recipes for the depth-2 ND classifier (issue 11, research phase).

Run: ``taskset -c 1 OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_recipe.py
[--datasets forest,sat4,sat36,synth2,synth5] [--folds 10] [--recipes paper,...]``

A plain-torch prototype of ``NDClassifier(depth=2)`` (``sknd.nn.NormalizedDifference``
-> optional fixed affine -> ``Linear``) with switchable recipe ingredients, on the
paper's protocol (``paper_splits``: stratified 10-fold, 70/20/10). Peers fitted on the
same folds:

- ``LR``: StandardScaler + LogisticRegression(C=1) on all classic (unit-weight) NDs,
  fitted on train + validation (what a user fits on the same rows);
- ``MLP``: ``NDClassifier(architecture="mlp")`` (paper recipe, sknd itself);
- ``sknd``: ``NDClassifier()`` today (paper recipe, sknd itself).

Prints recipe x dataset: mean +- std test accuracy over folds, paired difference with
LR, and the fit-time ratio (process CPU time) to the prototype's paper recipe on the
same folds (the prototype is an autograd loop, ~3-5x slower than sknd's fused step;
ratios between recipes are what carries over).
"""

import argparse
import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier
from sknd._nd._screening import screen_pairs
from sknd.datasets import load_forest_type, load_satimage
from sknd.experiments import paper_splits
from sknd.nn import NormalizedDifference, all_pairs

torch.set_num_threads(1)
warnings.filterwarnings("ignore")


# ----------------------------------------------------------------------------- data
def _synthetic(n_classes, n=2000, n_bands=8, seed=0):
    """Reflectance-like bands whose target is a sum of two *asymmetric* NDs.

    Bands are a smooth base spectrum times a per-sample illumination and small
    per-band variation, so classic NDs vary over a narrow range (as real
    reflectance series do). The latent score is
    ``ND(2*b0, b3) + 0.5 * ND(b1, 3*b5)`` plus noise; classes are its quantiles.
    """
    rng = np.random.default_rng(seed)
    base = np.linspace(0.1, 0.4, n_bands)
    illum = rng.uniform(0.5, 1.5, size=(n, 1))
    X = illum * base * np.exp(rng.normal(0, 0.25, size=(n, n_bands)))

    def nd(p, q):
        return (p - q) / (p + q)

    score = nd(2 * X[:, 0], X[:, 3]) + 0.5 * nd(X[:, 1], 3 * X[:, 5])
    score = score + rng.normal(0, 0.03, n)
    edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.searchsorted(edges, score)


def _synthetic_narrow(n_classes=6, n=3000, n_bands=16, seed=0):
    """MODIS-like: 4 bands x 4 dates, classes differ by a few percent on a few bands.

    Per-class multiplicative offsets (3 % sd) on every band, per-sample
    illumination (0.5-1.5) and 5 % within-class noise: the classic NDs vary over a
    narrow range (std ~0.03), the regime where the paper recipe underfits.
    """
    rng = np.random.default_rng(seed)
    base = np.tile([0.05, 0.08, 0.30, 0.20], n_bands // 4)
    offsets = rng.normal(0, 0.03, size=(n_classes, n_bands))
    y = rng.integers(0, n_classes, n)
    illum = rng.uniform(0.5, 1.5, size=(n, 1))
    X = illum * base * np.exp(offsets[y] + rng.normal(0, 0.05, size=(n, n_bands)))
    return X, y


def load(name):
    if name == "forest":
        X, y = load_forest_type(return_X_y=True)
    elif name == "sat4":
        X, y = load_satimage(center_pixel=True, return_X_y=True)
    elif name == "sat36":
        X, y = load_satimage(return_X_y=True)
    elif name == "synth2":
        X, y = _synthetic(2)
    elif name == "synth5":
        X, y = _synthetic(5)
    elif name == "narrow":
        X, y = _synthetic_narrow()
    else:
        raise ValueError(name)
    y = np.unique(np.asarray(y), return_inverse=True)[1]
    return np.asarray(X, dtype=np.float64), y


def classic_nd(X, pairs, eps=1e-6):
    a, b = X[:, pairs[:, 0]], X[:, pairs[:, 1]]
    return (a - b) / (a + b + eps)


# ----------------------------------------------------------------------------- recipe
@dataclass(frozen=True)
class Recipe:
    standardize: bool = False  # fixed affine (ND - mean0) / std0 between ND and Linear
    warm: bool = False  # output layer from a standardized LR (C=1) on the init indices
    epoch0: bool = False  # score validation before the first update
    lr_dense: float = 0.01
    lr_band: float = 0.01
    patience: int = 25
    max_epochs: int = 150
    plateau: bool = False  # ReduceLROnPlateau(factor .5, patience 10) on valid loss
    refit_fixed: bool = False  # epoch 0 selected -> refit the convex head on train+val
    refit_all: bool = False  # retrain on train+val for the selected number of epochs
    weight_decay: float = 1e-4
    pairs: object = "all"  # "all" or an int (screened)
    monitor_loss_ties: bool = False  # accuracy ties broken by lower validation loss
    warm_iter: int = 2000  # lbfgs iterations of the warm-start LR
    head_C: float = 1.0  # C of that refit
    refit_from_head: bool = False  # start that refit's lbfgs from the trained output layer
    refit_head: bool = False  # after early stopping: output layer refit as a convex LR
    #                           on train + val, band weights of the selected epoch frozen


RECIPES = {
    "paper": Recipe(),
    "paper+e0": Recipe(epoch0=True),
    "std": Recipe(standardize=True),
    "std+e0": Recipe(standardize=True, epoch0=True),
    "warm+e0": Recipe(warm=True, epoch0=True),  # warm head folded into Linear, no buffer
    "std+warm+e0": Recipe(standardize=True, warm=True, epoch0=True),
    "std+warm+e0 lrd.003 lrb.01": Recipe(
        standardize=True, warm=True, epoch0=True, lr_dense=0.003, lr_band=0.01
    ),
    "std+warm+e0 ties->loss": Recipe(
        standardize=True, warm=True, epoch0=True, monitor_loss_ties=True
    ),
    "std+warm+e0 pairs=412": Recipe(standardize=True, warm=True, epoch0=True, pairs=412),
    "std+warm+e0 pairs=200": Recipe(standardize=True, warm=True, epoch0=True, pairs=200),
    # Standardized outputs make each band-weight step ~1/std larger in the head's units:
    # smaller band-weight learning rates; the warm-start LR capped at 100 iterations.
    "std+e0 lrb.001": Recipe(standardize=True, epoch0=True, lr_band=0.001, warm_iter=100),
    "std+warm+e0 lrb.001": Recipe(
        standardize=True, warm=True, epoch0=True, lr_band=0.001, warm_iter=100
    ),
    "std+warm+e0 lrd.003 lrb.001": Recipe(
        standardize=True, warm=True, epoch0=True, lr_dense=0.003, lr_band=0.001, warm_iter=100
    ),
    "std+warm+e0 lrd.003 lrb.001 refitall": Recipe(
        standardize=True,
        warm=True,
        epoch0=True,
        lr_dense=0.003,
        lr_band=0.001,
        warm_iter=100,
        refit_all=True,
    ),
    "std+warm+e0 refithead": Recipe(
        standardize=True, warm=True, epoch0=True, warm_iter=100, refit_head=True
    ),
    "std+warm+e0 lrd.003 refithead": Recipe(
        standardize=True, warm=True, epoch0=True, lr_dense=0.003, warm_iter=100, refit_head=True
    ),
    "std+warm+e0 refithead C10": Recipe(
        standardize=True, warm=True, epoch0=True, warm_iter=100, refit_head=True, head_C=10.0
    ),
    "std+warm+e0 refithead conv": Recipe(
        standardize=True, warm=True, epoch0=True, refit_head=True, refit_from_head=True
    ),
    "std+warm+e0 w100": Recipe(standardize=True, warm=True, epoch0=True, warm_iter=100),
    "std+warm+e0 lr.003 p50 plateau": Recipe(
        standardize=True,
        warm=True,
        epoch0=True,
        lr_dense=0.003,
        lr_band=0.003,
        patience=50,
        plateau=True,
    ),
    "std+warm+e0 lr.003 refitfixed": Recipe(
        standardize=True, warm=True, epoch0=True, lr_dense=0.003, lr_band=0.003, refit_fixed=True
    ),
    "std+warm+e0 lr.003 refitall": Recipe(
        standardize=True, warm=True, epoch0=True, lr_dense=0.003, lr_band=0.003, refit_all=True
    ),
}


def _convex_head(Z, y, n_out, max_iter=2000, C=1.0, init=None):
    """Standardized-LR head: (weight, bias) of shape (n_out, P), (n_out,) on Z.

    ``init``: (weight, bias) to start lbfgs from (the current output layer).
    """
    lr = LogisticRegression(C=C, max_iter=max_iter, warm_start=init is not None)
    if init is not None:
        lr.coef_, lr.intercept_ = init
    lr.fit(Z, y)
    coef, intercept = lr.coef_, lr.intercept_
    if n_out == 1:
        return coef[:1], intercept[:1]
    return coef, intercept


class NDNet(torch.nn.Module):
    def __init__(self, n_features, pairs, n_out, mean=None, scale=None):
        super().__init__()
        self.nd = NormalizedDifference(n_features, pairs)
        P = len(pairs)
        self.register_buffer("mean", torch.zeros(P) if mean is None else torch.tensor(mean))
        self.register_buffer("scale", torch.ones(P) if scale is None else torch.tensor(scale))
        self.head = torch.nn.Linear(P, n_out)

    def forward(self, x):
        return self.head((self.nd(x) - self.mean) / self.scale)


def _loss_fn(n_out):
    if n_out == 1:
        return lambda out, y: torch.nn.functional.binary_cross_entropy_with_logits(
            out[:, 0], y.float()
        )
    return torch.nn.functional.cross_entropy


def _predict(net, X, n_out):
    with torch.no_grad():
        out = net(X)
    return (out[:, 0] > 0).long() if n_out == 1 else out.argmax(1)


def train(Xtr, ytr, Xva, yva, n_classes, r, seed, epochs_fixed=None):
    """Train one network. ``epochs_fixed``: no validation, run exactly that many epochs."""
    torch.manual_seed(seed)
    n_out = 1 if n_classes == 2 else n_classes
    n = Xtr.shape[1]
    pairs = all_pairs(n)
    if not (isinstance(r.pairs, str)) and r.pairs < len(pairs):
        pairs = screen_pairs(Xtr, ytr, pairs, r.pairs, classification=True)
    Z0 = classic_nd(Xtr, pairs)
    mean = scale = None
    if r.standardize:
        mean = Z0.mean(0).astype(np.float32)
        scale = np.maximum(Z0.std(0), 1e-6).astype(np.float32)
    net = NDNet(n, pairs, n_out, mean, scale)
    if r.warm:
        m = Z0.mean(0) if mean is None else mean
        s = np.maximum(Z0.std(0), 1e-6) if scale is None else scale
        W, b = _convex_head((Z0 - m) / s, ytr, n_out, r.warm_iter)
        if not r.standardize:  # fold the standardization into the Linear
            b = b - (W * m / s).sum(1)
            W = W / s
        with torch.no_grad():
            net.head.weight.copy_(torch.tensor(W, dtype=torch.float32))
            net.head.bias.copy_(torch.tensor(b, dtype=torch.float32))
    band = [net.nd.a, net.nd.c]
    dense = list(net.head.parameters())
    opt = torch.optim.Adam(
        [{"params": band, "lr": r.lr_band}, {"params": dense, "lr": r.lr_dense}],
        weight_decay=r.weight_decay,
    )
    sched = (
        torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=10)
        if r.plateau
        else None
    )
    loss_fn = _loss_fn(n_out)
    Xt = torch.tensor(Xtr, dtype=torch.float32)
    yt = torch.tensor(ytr)
    Xv = None if Xva is None else torch.tensor(Xva, dtype=torch.float32)
    yv = None if yva is None else torch.tensor(yva)
    gen = torch.Generator().manual_seed(seed)
    best = (-1.0, np.inf)
    best_state, best_epoch, wait = None, None, 0

    def evaluate(epoch):
        nonlocal best, best_state, best_epoch, wait
        with torch.no_grad():
            out = net(Xv)
            vloss = float(loss_fn(out, yv))
        acc = float((_predict(net, Xv, n_out) == yv).float().mean())
        key = (acc, -vloss) if r.monitor_loss_ties else (acc,)
        if best_state is None or key > best[: len(key)]:
            best = (acc, -vloss)
            best_state = {k: v.clone() for k, v in net.state_dict().items()}
            best_epoch, wait = epoch, 0
        else:
            wait += 1
        return vloss

    if epochs_fixed is None and r.epoch0:
        evaluate(0)
    max_epochs = r.max_epochs if epochs_fixed is None else epochs_fixed
    for epoch in range(1, max_epochs + 1):
        order = torch.randperm(len(Xt), generator=gen)
        Xs, ys = Xt[order], yt[order]
        for start in range(0, len(Xs), 32):
            opt.zero_grad()
            loss = loss_fn(net(Xs[start : start + 32]), ys[start : start + 32])
            loss.backward()
            opt.step()
        if epochs_fixed is not None:
            continue
        vloss = evaluate(epoch)
        if sched is not None:
            sched.step(vloss)
        if wait >= r.patience:
            break
    if epochs_fixed is None:
        net.load_state_dict(best_state)
    return net, pairs, best_epoch


def fit_predict(Xtr, ytr, Xva, yva, Xte, n_classes, r, seed):
    net, _, best_epoch = train(Xtr, ytr, Xva, yva, n_classes, r, seed)
    n_out = 1 if n_classes == 2 else n_classes
    Xall, yall = np.vstack([Xtr, Xva]), np.concatenate([ytr, yva])
    if r.refit_all:
        if best_epoch == 0:
            net, _, _ = train(Xall, yall, None, None, n_classes, replace(r, warm=True), seed, 0)
        else:
            net, _, _ = train(Xall, yall, None, None, n_classes, r, seed, best_epoch)
    elif r.refit_fixed and best_epoch == 0:
        net, _, _ = train(Xall, yall, None, None, n_classes, r, seed, 0)
    elif r.refit_head:
        with torch.no_grad():
            Z = ((net.nd(torch.tensor(Xall, dtype=torch.float32)) - net.mean) / net.scale).numpy()
        init = None
        if r.refit_from_head:
            init = (
                net.head.weight.detach().double().numpy().copy(),
                net.head.bias.detach().double().numpy().copy(),
            )
        W, b = _convex_head(Z.astype(np.float64), yall, n_out, r.warm_iter, r.head_C, init)
        with torch.no_grad():
            net.head.weight.copy_(torch.tensor(W, dtype=torch.float32))
            net.head.bias.copy_(torch.tensor(b, dtype=torch.float32))
    return _predict(net, torch.tensor(Xte, dtype=torch.float32), n_out).numpy(), best_epoch


def lr_baseline(Xtr, ytr, Xte):
    pairs = all_pairs(Xtr.shape[1])
    sc = StandardScaler().fit(classic_nd(Xtr, pairs))
    lr = LogisticRegression(C=1.0, max_iter=5000).fit(sc.transform(classic_nd(Xtr, pairs)), ytr)
    return lr.predict(sc.transform(classic_nd(Xte, pairs)))


# ----------------------------------------------------------------------------- main
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--datasets", default="forest,sat4,synth2,synth5,sat36")
    p.add_argument("--folds", type=int, default=10, help="folds run (of 10)")
    p.add_argument("--recipes", default=",".join(RECIPES))
    p.add_argument("--peers", default="LR,MLP,sknd")
    args = p.parse_args()
    recipes = args.recipes.split(",")
    peers = [x for x in args.peers.split(",") if x]
    results = {}
    for ds in args.datasets.split(","):
        X, y = load(ds)
        K = len(np.unique(y))
        splits = paper_splits(y, 10, random_state=0)[: args.folds]
        for fold, (tr, va, te) in enumerate(splits):
            seed = 1000 + fold
            for name in peers + recipes:
                t0 = time.process_time()
                extra = ""
                if name == "LR":
                    pred = lr_baseline(X[np.r_[tr, va]], y[np.r_[tr, va]], X[te])
                elif name in ("MLP", "sknd"):
                    arch = "mlp" if name == "MLP" else "nd"
                    est = NDClassifier(architecture=arch, random_state=seed)
                    est.fit(X[tr], y[tr], X_val=X[va], y_val=y[va])
                    pred = est.predict(X[te])
                else:
                    pred, be = fit_predict(
                        X[tr], y[tr], X[va], y[va], X[te], K, RECIPES[name], seed
                    )
                    extra = f" best_epoch={be}"
                dt = time.process_time() - t0
                acc = float((pred == y[te]).mean()) * 100
                results.setdefault((name, ds), []).append((acc, dt))
                print(f"{ds} fold {fold} {name:34s} {acc:6.2f} {dt:6.2f}s{extra}", flush=True)
        print_table(results, peers + recipes, [ds])
    print_table(results, peers + recipes, args.datasets.split(","))


def print_table(results, names, datasets):
    print("\n| recipe | " + " | ".join(datasets) + " |")
    print("|---|" + "---|" * len(datasets))
    for name in names:
        cells = []
        for ds in datasets:
            rows = results.get((name, ds))
            if not rows:
                cells.append("")
                continue
            acc = np.array([a for a, _ in rows])
            t = np.array([d for _, d in rows])
            ref = results.get(("LR", ds))
            # Fit time relative to the prototype's paper recipe (same loop, same folds).
            base = results.get(("paper", ds))
            cell = f"{acc.mean():.2f} ± {acc.std():.2f}"
            if ref and name != "LR":
                diff = acc - np.array([a for a, _ in ref])[: len(acc)]
                cell += f" (vs LR {diff.mean():+.2f}, {int((diff >= 0).sum())}/{len(diff)})"
            if base:
                cell += f" t×{t.sum() / sum(d for _, d in base[: len(t)]):.2f}"
            cells.append(cell)
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(flush=True)


if __name__ == "__main__":
    main()
