"""A learnable index as the first layer of a small CNN on image patches
====================================================================

Under a minute on CPU.

The patches are generated so that the answer is known: each of 6 bands is a smooth random
field times a random illumination, and the target of a patch is the mean over its pixels of::

    NDI* = (b1 - 0.5 b3) / (b1 + 0.5 b3),

the normalized difference of bands 1 and 3 with the coefficient ratio k = wc / wa = 0.5.
The CNN sees all 15 band pairs through :class:`sknd.nn.NormalizedDifference` (``dim=1``:
every pair at every pixel of the ``(N, C, H, W)`` batch), then one 3 x 3 convolution and a
spatial mean. Trained with plain torch, it puts its largest weight on the pair (1, 3) and
its learned ``k = softplus(c) / softplus(a)`` moves from 1 (the untrained layer) towards 0.5
(0.63 after 1,500 steps; the other 14 indices absorb the rest of the fit, test MSE 1e-5 for
a target variance of 1.2e-2). The same module then trains inside a skorch
``NeuralNetRegressor``. About 30 s on one CPU core.

Run: ``PYTHONPATH=. python examples/image_patches_cnn.py``
"""

import torch
import torch.nn.functional as F
from skorch import NeuralNetRegressor
from torch import nn

from sknd.nn import NormalizedDifference

N_BANDS, SIZE, TRUE_PAIR, TRUE_K = 6, 12, (1, 3), 0.5


def make_patches(n_patches, seed=0):
    """Band patches (N, C, H, W) and the mean of the true index over each patch."""
    gen = torch.Generator().manual_seed(seed)
    # Smooth fields: coarse noise upsampled, so that neighbouring pixels are alike.
    coarse = torch.rand(n_patches, N_BANDS, SIZE // 4, SIZE // 4, generator=gen)
    bands = 0.05 + 0.5 * F.interpolate(coarse, size=(SIZE, SIZE), mode="bilinear")
    illumination = 0.5 + torch.rand(n_patches, 1, 1, 1, generator=gen)
    bands = bands * illumination  # the index is blind to it, raw bands are not
    i, j = TRUE_PAIR
    index = (bands[:, i] - TRUE_K * bands[:, j]) / (bands[:, i] + TRUE_K * bands[:, j])
    return bands, index.mean((1, 2)).unsqueeze(1)


class PatchRegressor(nn.Module):
    """Learnable indices per pixel, a 3 x 3 convolution, then the mean over the patch."""

    def __init__(self, n_bands=N_BANDS):
        super().__init__()
        self.nd = NormalizedDifference(n_bands, dim=1)
        self.conv = nn.Conv2d(self.nd.n_pairs, 1, 3, padding=1)

    def forward(self, x):
        return self.conv(self.nd(x)).mean((2, 3))


def learned_k(layer, pair):
    """``k = softplus(c) / softplus(a)`` of ``pair``, oriented as ``(b_i - k b_j) / ...``."""
    pairs = layer.pairs.tolist()
    row = pairs.index(list(pair))
    return (F.softplus(layer.c[row]) / F.softplus(layer.a[row])).item()


def main():
    torch.manual_seed(0)
    X, y = make_patches(512)
    X_test, y_test = make_patches(256, seed=1)

    model = PatchRegressor()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(1500):
        optimizer.zero_grad()
        loss = F.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()
    test_mse = F.mse_loss(model(X_test), y_test).item()
    weight = model.conv.weight.detach().abs().sum((0, 2, 3))
    strongest = model.nd.pairs[weight.argmax()].tolist()
    print(f"plain torch: test MSE {test_mse:.2e} (target variance {y_test.var().item():.2e})")
    print(f"pair with the largest convolution weight: {tuple(strongest)} (true {TRUE_PAIR})")
    print(f"learned k of {TRUE_PAIR}: {learned_k(model.nd, TRUE_PAIR):.3f} (true {TRUE_K})")

    net = NeuralNetRegressor(
        PatchRegressor,
        optimizer=torch.optim.Adam,
        lr=0.01,
        max_epochs=150,
        batch_size=64,
        train_split=None,
        verbose=0,
    )
    net.fit(X, y)
    print(f"skorch: test R^2 {net.score(X_test, y_test):.3f}")
    print(f"skorch: learned k of {TRUE_PAIR}: {learned_k(net.module_.nd, TRUE_PAIR):.3f}")


if __name__ == "__main__":
    main()
