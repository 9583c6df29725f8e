"""ND layer forward+backward against ``nn.Linear`` (issue 5, target 1).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_layer.py [--quick]``

Prints, for one torch thread:

1. time of ND forward+backward at 10 bands, batch 4096 (45 outputs) relative to
   ``nn.Linear(10, 45)`` forward+backward, for the "gather" and "matmul"
   methods and a naive autograd implementation by indexing; once with the input
   not requiring a gradient (first layer, as in training) and once requiring it;
2. the gather/matmul crossover over the number of bands (sets
   ``sknd.nn.MATMUL_MAX_INPUTS``), at batch 4096 and 32;
3. memory at 200 bands (19,900 pairs), batch 256: bytes saved for backward
   (counted with ``torch.autograd.graph.saved_tensors_hooks``) and the peak of
   live CPU allocations during forward+backward (profiler memory events), both
   against the size of the output;
4. image patches (issue 15): ND forward+backward on ``(32, 10, 64, 64)``
   (45 outputs per pixel, ``dim=1``) against ``nn.Conv2d(10, 45, 1)``, for
   ``method="auto"`` (band slices, also what ``"gather"`` does on images) and
   ``"matmul"`` (two GEMMs, the default before), and the cost of the input
   check (``check_input=True`` vs False);
5. ``torch.compile`` (inductor) of a training step of a depth-2 ND network
   (10 bands, batch 4096 and 32, Adam) against the same step in eager mode,
   after checking that ``torch._dynamo.explain`` finds no graph break.

``--sections 4 5`` runs only some sections; ``--user`` times user CPU time only (see
``CLOCK``), ``--wall`` wall-clock time.

Timings interleave the candidates within each repeat and report medians, so
that load from other processes hits all candidates alike; read the ratios, not
the absolute times.
"""

import argparse
import contextlib
import platform
import statistics
import time

import torch
import torch.nn.functional as F

from sknd.nn import NormalizedDifference, all_pairs


def naive(x, a, c, pairs, epsilon=1e-6):
    """Reference ND by indexing, differentiated by autograd."""
    wa, wc = F.softplus(a), F.softplus(c)
    bi, bj = x[:, pairs[:, 0]], x[:, pairs[:, 1]]
    return (wa * bi - wc * bj) / (wa * bi + wc * bj + epsilon)


def fwd_bwd(fn, x, grad):
    out = fn(x)
    out.backward(grad)


#: Clock of the timings: CPU time of this process by default, because on a machine shared with
#: other busy processes wall time mostly measures waiting for a core (--wall to use it).
#: Process CPU time includes the kernel's page faults on fresh memory, which come and go with
#: the allocator's state (glibc returns freed blocks of tens of MB to the system when they
#: pile up at the top of the heap): --user times user CPU time only.
CLOCK = time.process_time


def user_time():
    """User CPU time of this process, in seconds (Unix)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def time_candidates(candidates, repeats, inner):
    """Median seconds per call of each candidate, interleaved."""
    samples = {name: [] for name in candidates}
    for fn in candidates.values():  # warm-up
        for _ in range(3):
            fn()
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = CLOCK()
            for _ in range(inner):
                fn()
            samples[name].append((CLOCK() - start) / inner)
    return {name: statistics.median(values) for name, values in samples.items()}


def layer_candidates(n_features, batch, input_grad, with_naive=True):
    torch.manual_seed(0)
    pairs = torch.as_tensor(all_pairs(n_features))
    n_pairs = len(pairs)
    x = torch.rand(batch, n_features).add_(0.05).requires_grad_(input_grad)
    grad = torch.randn(batch, n_pairs)
    linear = torch.nn.Linear(n_features, n_pairs)
    gather = NormalizedDifference(n_features, method="gather")
    matmul = NormalizedDifference(n_features, method="matmul")
    a = torch.zeros(n_pairs, requires_grad=True)
    c = torch.zeros(n_pairs, requires_grad=True)
    candidates = {
        "linear": lambda: fwd_bwd(linear, x, grad),
        "gather": lambda: fwd_bwd(gather, x, grad),
        "matmul": lambda: fwd_bwd(matmul, x, grad),
    }
    if with_naive:
        candidates["naive"] = lambda: fwd_bwd(lambda v: naive(v, a, c, pairs), x, grad)
    return candidates


def section_ratio(repeats):
    print("\n## 1. ND forward+backward vs nn.Linear(10, 45), batch 4096 (median of", repeats, ")")
    for input_grad in (False, True):
        times = time_candidates(layer_candidates(10, 4096, input_grad), repeats, inner=20)
        base = times["linear"]
        label = "x.requires_grad" if input_grad else "x without grad (first layer)"
        print(f"{label}: linear {base * 1e3:.3f} ms")
        for name in ("gather", "matmul", "naive"):
            milliseconds, ratio = times[name] * 1e3, times[name] / base
            print(f"  {name:7s} {milliseconds:7.3f} ms   ratio to linear {ratio:5.2f}")


def section_crossover(repeats):
    print("\n## 2. gather vs matmul by number of bands (x without grad; ratio matmul/gather)")
    for batch in (4096, 32):
        row = []
        for n_features in (4, 8, 10, 13, 16, 20, 24, 32, 48):
            inner = 10 if batch == 4096 else 200
            if batch == 4096 and n_features >= 32:
                inner = 3
            cands = layer_candidates(n_features, batch, False, with_naive=False)
            times = time_candidates({k: cands[k] for k in ("gather", "matmul")}, repeats, inner)
            row.append(f"{n_features}: {times['matmul'] / times['gather']:.2f}")
        print(f"batch {batch}: " + ", ".join(row))


def peak_memory(fn):
    """Peak of the bytes allocated on CPU while ``fn`` runs and still live (profiler events)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for event in events:
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def measure_memory(fn):
    """Bytes saved for backward and peak live bytes while ``fn`` runs forward and backward.

    ``fn(hooks)`` runs the forward pass inside ``hooks`` (a saved-tensors context) and then
    the backward pass.
    """
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    fn(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
    saved_bytes = sum(saved)
    peak = peak_memory(lambda: fn(contextlib.nullcontext()))
    return saved_bytes, peak


def section_memory(n_features=200, batch=256):
    n_pairs = n_features * (n_features - 1) // 2
    print(f"\n## 3. memory at {n_features} bands ({n_pairs} pairs), batch {batch}")
    torch.manual_seed(0)
    x = torch.rand(batch, n_features).add_(0.05)
    output_bytes = batch * n_pairs * 4
    print(f"output: {output_bytes / 2**20:.1f} MiB; input x: {x.numel() * 4 / 2**20:.2f} MiB")
    a = torch.zeros(n_pairs, requires_grad=True)
    c = torch.zeros(n_pairs, requires_grad=True)
    pairs = torch.as_tensor(all_pairs(n_features))
    layers = {
        method: NormalizedDifference(n_features, method=method) for method in ("gather", "matmul")
    }
    for layer in layers.values():
        layer(x[:2])  # build the pair layout (a cached constant of the layer)
    candidates = {name: layer for name, layer in layers.items()}
    candidates["naive"] = lambda v: naive(v, a, c, pairs)
    for name, forward in candidates.items():

        def run(hooks, forward=forward):
            with hooks:
                out = forward(x)
            out.backward(torch.ones_like(out))

        saved_bytes, peak = measure_memory(run)
        print(
            f"  {name:7s} saved for backward {saved_bytes / 2**10:8.1f} KiB "
            f"({saved_bytes / output_bytes:.3f} x output); peak live during forward+backward "
            f"{peak / 2**20:6.1f} MiB ({peak / output_bytes:.2f} x output, "
            "incl. output and its grad)"
        )


def section_image(repeats):
    print(
        "\n## 4. (32, 10, 64, 64) patches, forward+backward vs Conv2d(10, 45, 1) (median of",
        repeats,
        ")",
    )
    torch.manual_seed(0)
    x = torch.rand(32, 10, 64, 64).add_(0.05)
    grad = torch.randn(32, 45, 64, 64)
    conv = torch.nn.Conv2d(10, 45, 1)
    candidates = {"conv1x1": lambda: fwd_bwd(conv, x, grad)}
    for method, label in (("auto", "auto (slices)"), ("matmul", "matmul")):
        for check in (True, False):
            layer = NormalizedDifference(10, method=method, check_input=check)
            candidates[f"{label}{'' if check else ' unchecked'}"] = lambda layer=layer: fwd_bwd(
                layer, x, grad
            )
    times = time_candidates(candidates, repeats, inner=2)
    base = times.pop("conv1x1")
    print(f"conv1x1 {base * 1e3:.1f} ms")
    for name, seconds in times.items():
        print(f"  {name:24s} {seconds * 1e3:7.1f} ms   ratio to conv1x1 {seconds / base:5.2f}")


def section_compile(repeats):
    import torch._dynamo

    from sknd.networks import build_network

    print("\n## 5. training step of a depth-2 ND network: torch.compile vs eager")
    for batch in (4096, 32):
        torch.manual_seed(0)
        x = torch.rand(batch, 10).add_(0.05)
        y = torch.randint(0, 2, (batch, 1)).float()
        steps = {}
        for name in ("eager", "compiled"):
            net = build_network("nd", 10, 1, depth=2)
            net[0].check_input = False  # the estimators validate their data once, up front
            optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
            loss_fn = torch.nn.BCEWithLogitsLoss()

            def step(net=net, optimizer=optimizer, loss_fn=loss_fn, x=x, y=y):
                optimizer.zero_grad()
                loss_fn(net(x), y).backward()
                optimizer.step()

            if name == "compiled":
                breaks = torch._dynamo.explain(net)(x).graph_break_count
                print(f"batch {batch}: graph breaks in the network's forward: {breaks}")
                net.forward = torch.compile(net.forward)
            steps[name] = step
        inner = 20 if batch == 4096 else 200
        times = time_candidates(steps, repeats, inner)
        print(
            f"  eager {times['eager'] * 1e3:.3f} ms, compiled {times['compiled'] * 1e3:.3f} ms "
            f"per step: compiled / eager {times['compiled'] / times['eager']:.2f}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--wall", action="store_true", help="time wall clock, not CPU time")
    parser.add_argument("--user", action="store_true", help="time user CPU time only")
    parser.add_argument(
        "--sections", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="sections to run"
    )
    args = parser.parse_args()
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter
    elif args.user:
        CLOCK = user_time
    torch.set_num_threads(1)
    repeats = 5 if args.quick else 15
    clock = "wall clock" if args.wall else "user CPU time" if args.user else "process CPU time"
    print(f"# bench_layer: torch {torch.__version__}, {platform.machine()}, 1 thread, {clock}")
    sections = {
        1: lambda: section_ratio(repeats),
        2: lambda: section_crossover(max(3, repeats // 3)),
        3: section_memory,
        4: lambda: section_image(repeats),
        5: lambda: section_compile(repeats),
    }
    for number in args.sections:
        sections[number]()


if __name__ == "__main__":
    main()
