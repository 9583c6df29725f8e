"""A learnable index as the first layer of a small CNN on image patches
====================================================================

About 25 s of CPU time on one core.

The patches are generated so that the answer is known: each of 6 bands is a smooth random
field times a random illumination, and the target of a patch is the mean over its pixels of::

    NDI* = (2 b1 - b3) / (2 b1 + b3),

the normalized difference of bands 1 and 3 with band 1 weighted k = 2 against band 3: the
library's ``k = softplus(a) / softplus(c)``, as :attr:`sknd.NDRegressor.indices_` reports
it (k = 1: the classic index).

The CNN sees all 15 band pairs through :class:`sknd.nn.NormalizedDifference` (``dim=1``:
every pair at every pixel of the ``(N, C, H, W)`` batch), then one 3 x 3 convolution and a
spatial mean. Trained with plain torch, it puts its largest weight on the pair (1, 3) and
its learned ``k`` moves from 1 (the untrained layer) to 2 (1.98 to 1.99 over four data and
initialisation seeds). The same module then trains inside a skorch ``NeuralNetRegressor``.

Last, the CNN starts from the indices a scikit-learn estimator learned on a pixel table:
:meth:`sknd.nn.NormalizedDifference.from_estimator` turns a fitted :class:`sknd.NDRegressor`
into the CNN's first layer (its band pairs and learned weights), on which the CNN trains
its convolution (and may fine-tune the layer too). The band names travel with it: the
layer is built for ``bands=["b0", ..., "b5"]``, and pairs can be named.

Why the fit has to be run to convergence: k is identified only by the curvature of the
index. Near the true k, ``N_k' = N + (k'/k - 1) (1 - N**2) / 2`` to first order, so a
model with the wrong k differs from the target by a small quadratic term once the
convolution has rescaled and shifted its index (and the 14 other indices absorb part of
that term): at k = 1.05 the model already explains 99 % of the target's variance, at
k = 1.9 99.99 %. Along k the loss is nearly flat, and an optimizer that stops on the
plateau reports a biased k (Adam at a learning rate of 0.01 on 512 patches of 12 x 12
pixels: k = 1.05 after 500 steps, 1.6 after 1,500, 1.85 after 5,000; no weight decay is
involved, and k is computed exactly as the data were made; ``benchmarks/RESULTS.md``).
The problem is small and smooth (166 parameters, 256 patches of 8 x 8 pixels), so the
example standardizes the target, as any regression would, and fits the whole batch with
L-BFGS and a line search, which stops on its own at the minimum. A more flexible head (a
nonlinear layer after the indices) would make k unidentifiable altogether: each index of
a pair is a monotone function of any other.

Run: ``PYTHONPATH=. python examples/image_patches_cnn.py``
"""

import torch
import torch.nn.functional as F
from skorch import NeuralNetRegressor
from torch import nn

from sknd import NDRegressor
from sknd.nn import NormalizedDifference
from sknd.plotting import pyplot

N_BANDS, SIZE, TRUE_PAIR, TRUE_K = 6, 8, (1, 3), 2.0


def make_patches(n_patches, seed=0):
    """Band patches (N, C, H, W) and the mean of the true index over each patch."""
    gen = torch.Generator().manual_seed(seed)
    # Smooth fields: coarse noise upsampled, so that neighbouring pixels are alike.
    coarse = torch.rand(n_patches, N_BANDS, SIZE // 4, SIZE // 4, generator=gen)
    bands = 0.05 + 0.5 * F.interpolate(coarse, size=(SIZE, SIZE), mode="bilinear")
    illumination = 0.5 + torch.rand(n_patches, 1, 1, 1, generator=gen)
    bands = bands * illumination  # the index is blind to it, raw bands are not
    i, j = TRUE_PAIR
    index = (TRUE_K * bands[:, i] - bands[:, j]) / (TRUE_K * bands[:, i] + bands[:, j])
    return bands, index.mean((1, 2)).unsqueeze(1)


class PatchRegressor(nn.Module):
    """Learnable indices per pixel, a 3 x 3 convolution, then the mean over the patch."""

    def __init__(self, n_bands=N_BANDS, nd=None):
        super().__init__()
        # A new layer at the classic indices, or a given one (e.g. learned by an estimator).
        self.nd = NormalizedDifference(n_bands, dim=1) if nd is None else nd
        self.conv = nn.Conv2d(self.nd.n_pairs, 1, 3, padding=1)

    def forward(self, x):
        return self.conv(self.nd(x)).mean((2, 3))


def learned_k(layer, pair):
    """``k = softplus(a) / softplus(c)`` of ``pair``: the weight of band i against band j."""
    pairs = layer.pairs.tolist()
    row = pairs.index(list(pair))
    return (F.softplus(layer.a[row]) / F.softplus(layer.c[row])).item()


def pixel_table(bands, n_pixels, seed=0):
    """A sample of pixels as rows with the true index of each: a pixel-level survey."""
    gen = torch.Generator().manual_seed(seed)
    pixels = bands.permute(0, 2, 3, 1).reshape(-1, N_BANDS).double()
    sample = pixels[torch.randperm(len(pixels), generator=gen)[:n_pixels]].numpy()
    i, j = TRUE_PAIR
    return sample, (TRUE_K * sample[:, i] - sample[:, j]) / (TRUE_K * sample[:, i] + sample[:, j])


def fit_lbfgs(model, X, y, steps=5):
    """Full-batch L-BFGS with a strong-Wolfe line search, until it stops on its own."""
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=100, line_search_fn="strong_wolfe")

    def loss():
        optimizer.zero_grad()
        value = F.mse_loss(model(X), y)
        value.backward()
        return value

    for _ in range(steps):  # each step runs up to 100 iterations
        optimizer.step(loss)
    return model


def r2(predicted, y):
    return 1 - F.mse_loss(predicted, y).item() / y.var(unbiased=False).item()


def main():
    torch.manual_seed(0)
    X, y = make_patches(256)
    X_test, y_test = make_patches(256, seed=1)
    # A unit-variance target puts the optimizer's stopping tolerances on the loss's scale.
    mean, std = y.mean(), y.std()
    z = (y - mean) / std

    model = fit_lbfgs(PatchRegressor(), X, z)
    with torch.no_grad():
        test_r2 = r2(model(X_test) * std + mean, y_test)
    weight = model.conv.weight.detach().abs().sum((0, 2, 3))
    strongest = model.nd.pairs[weight.argmax()].tolist()
    print(f"plain torch: test R^2 {test_r2:.5f}")
    print(f"pair with the largest convolution weight: {tuple(strongest)} (true {TRUE_PAIR})")
    print(f"learned k of {TRUE_PAIR}: {learned_k(model.nd, TRUE_PAIR):.3f} (true {TRUE_K})")

    plt = pyplot()  # matplotlib, or the command that installs it

    with torch.no_grad():
        predicted = (model(X_test) * std + mean).squeeze(1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    left.bar([f"{i},{j}" for i, j in model.nd.pairs.tolist()], weight.numpy())
    left.set(xlabel="band pair (i, j)", ylabel="sum of |convolution weights|")
    left.set_title("The pairs the CNN uses: (1, 3) carries the target")
    right.scatter(y_test.squeeze(1), predicted, s=8)
    right.set(xlabel="true patch mean of NDI*", ylabel="predicted")
    right.set_title(f"Test patches (R^2 {test_r2:.4f})")

    net = NeuralNetRegressor(
        PatchRegressor,
        optimizer=torch.optim.LBFGS,
        optimizer__line_search_fn="strong_wolfe",
        optimizer__max_iter=100,
        lr=1.0,
        max_epochs=5,
        batch_size=-1,  # the whole training set, as L-BFGS needs
        train_split=None,
        verbose=0,
    )
    net.fit(X, z)
    with torch.no_grad():
        skorch_r2 = r2(torch.as_tensor(net.predict(X_test)) * std + mean, y_test)
    print(f"skorch: test R^2 {skorch_r2:.5f}")
    print(f"skorch: learned k of {TRUE_PAIR}: {learned_k(net.module_.nd, TRUE_PAIR):.3f}")

    # An estimator learns indices on a table of pixels; the CNN starts from its ND layer.
    table, index = pixel_table(X, 5_000)
    bands = [f"b{i}" for i in range(N_BANDS)]
    reg = NDRegressor(bands=bands, max_epochs=20, random_state=0).fit(table, index)
    nd = NormalizedDifference.from_estimator(reg, dim=1)
    row = reg.indices_.query("band_i == 'b1' and band_j == 'b3'")
    print(f"NDRegressor on pixels: indices_ gives k = {row['k'].item():.3f} for (b1, b3)")
    print(f"its layer in the CNN: k of {TRUE_PAIR} {learned_k(nd, TRUE_PAIR):.3f}, layer {nd}")
    # Its indices are already right: train the convolution on them, the layer frozen (a
    # convex problem, at most 100 iterations); unfreeze it to fine-tune everything.
    model = PatchRegressor(nd=nd)
    model.nd.requires_grad_(False)
    model = fit_lbfgs(model, X, z, steps=1)
    with torch.no_grad():
        started_r2 = r2(model(X_test) * std + mean, y_test)
    print(f"CNN on the estimator's indices (layer frozen): test R^2 {started_r2:.5f}")


if __name__ == "__main__":
    main()
