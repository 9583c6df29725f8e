"""Rewrite the printed outputs and the figures that the pages show, by running their code.

    python tools/regen_docs_outputs.py            # rerun the code, rewrite what is stale
    python tools/regen_docs_outputs.py --check    # rerun it, exit 1 naming each stale output

A page's printed output is the first plain (language-less) fenced block after its lead-in,
a phrase of the paragraph that introduces it. :data:`OUTPUTS` lists each such block with the
code that prints it: a script (``examples/demo.py``, which ``make demo`` runs) or the page's
own ``python`` blocks, run in order in one namespace as ``tests/docs/test_docs.py`` runs them,
each block's printed text going to the output block after it. Everything runs in fresh
processes of this Python, from a temporary working directory, on this checkout's sknd.

The figures the pages embed from ``docs/images`` (:data:`FIGURES`) are the PNG files a
script writes, from the run that prints the page's text where a page shows both, so that
figure and text cannot disagree; they compare as images (:func:`same_image`).

Timings ("0.4 s") vary from run to run and with the machine's load: they compare as "N s",
and a rewritten block keeps the page's timings, in order, where it has as many (measure
them on quiet cores and write them with ``--timings``). ``tests/docs/test_docs.py`` runs the
check (a slow test: it trains) and checks that every plain block a page introduces as
printed output is listed here. Run this after any change that moves a default or a figure
of these outputs (the training recipe, the epochs, the parameter counts).
"""

import argparse
import contextlib
import difflib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: (page, the lead-in's phrase, the code that prints the block): ``("script", PATH, ARGS)``
#: runs a script (``{tmp}`` in ARGS is a temporary folder; ``stop`` cuts the output before
#: that text, what the page leaves out), ``("block", N)`` the page's N-th python block.
OUTPUTS = [
    ("README.md", "The demo prints", ("script", "examples/demo.py", [])),
    ("docs/quickstart.md", "It prints (", ("block", 0)),
    ("docs/quickstart.md", "It prints the five", ("block", 1)),
    ("docs/quickstart.md", "It prints the mean accuracy", ("block", 2)),
    (
        "docs/interpretation.md",
        "The example prints (",
        ("script", "examples/sentinel2_indices.py", ["{tmp}"], "\nfigures written to"),
    ),
]
#: (committed image, the script and its arguments, the PNG file it writes under ``{tmp}``):
#: the figures the pages embed.
FIGURES = [
    (
        "docs/images/sentinel2_coefficients.png",
        ("examples/sentinel2_indices.py", ["{tmp}"]),
        "sentinel2_coefficients.png",
    ),
    (
        "docs/images/sentinel2_training_curves.png",
        ("examples/sentinel2_indices.py", ["{tmp}"]),
        "sentinel2_training_curves.png",
    ),
    (
        "docs/images/landsat8_to_sentinel2.png",
        ("examples/landsat8_to_sentinel2.py", ["{tmp}"]),
        "landcover.png",
    ),
]
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
TIMING = re.compile(r"\b\d+(?:\.\d+)? s\b")


def output_block(text, lead_in):
    """``(start, end)`` of the content of the first plain block after ``lead_in``."""
    at = text.find(lead_in)
    if at < 0:
        raise ValueError(f"lead-in {lead_in!r} not found")
    for match in FENCE.finditer(text, at):
        if match.group(1) == "":
            return match.span(2)
    raise ValueError(f"no plain block after {lead_in!r}")


def python_blocks(text):
    return [match.group(2) for match in FENCE.finditer(text) if match.group(1) == "python"]


def run_blocks(page):
    """Each python block's printed text (run here: the child process of :func:`printed`)."""
    import matplotlib

    matplotlib.use("Agg")
    namespace = {"__name__": "__main__"}
    outputs = []
    for number, source in enumerate(python_blocks(page.read_text(encoding="utf-8"))):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(source, f"{page.name}, python block {number}", "exec"), namespace)
        outputs.append(buffer.getvalue())
    return outputs


def _python(arguments, cwd):
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    result = subprocess.run(
        [sys.executable, *arguments], cwd=cwd, env=env, capture_output=True, text=True
    )
    if result.returncode:
        raise RuntimeError(f"{' '.join(arguments)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def run_script(script, arguments, cache):
    """``(printed text, {name: bytes} of the PNG files written)`` of ``script`` run with
    ``arguments`` (``{tmp}``: a temporary folder, also its working directory); one run per
    script and arguments in ``cache``."""
    key = (script, tuple(arguments))
    if key not in cache:
        with tempfile.TemporaryDirectory() as tmp:
            text = _python([str(ROOT / script), *(a.format(tmp=tmp) for a in arguments)], tmp)
            figures = {path.name: path.read_bytes() for path in Path(tmp).rglob("*.png")}
        cache[key] = text, figures
    return cache[key]


def printed(entry, cache):
    """What the code of ``entry`` (a row of :data:`OUTPUTS`) prints today."""
    page, _, source = entry
    if source[0] == "block":
        if page not in cache:
            runner = [str(Path(__file__).resolve()), "--run-blocks", str(ROOT / page)]
            with tempfile.TemporaryDirectory() as tmp:
                cache[page] = json.loads(_python(runner, tmp))
        return cache[page][source[1]]
    script, arguments, *stop = source[1:]
    text, _ = run_script(script, arguments, cache)
    return text.split(stop[0])[0] + "\n" if stop else text


def as_block(text):
    """Printed text as a page shows it: no trailing spaces, one final line break."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\n"


def same(shown, today):
    """Whether a block shows ``today``'s output, timings aside."""
    return TIMING.sub("N s", as_block(shown)) == TIMING.sub("N s", as_block(today))


def with_timings(today, shown):
    """``today`` with the timings of ``shown``, in order, where it has as many."""
    timings = TIMING.findall(shown)
    if len(timings) != len(TIMING.findall(today)):
        return today
    timings = iter(timings)
    return TIMING.sub(lambda match: next(timings), today)


def stale_blocks(entries=OUTPUTS, *, write=False, timings=False, cache=None):
    """The entries whose block differs from what their code prints, as unified diffs.

    With ``write``, their blocks are rewritten (with the measured timings if ``timings``).
    ``cache`` keeps the scripts' runs (:func:`run_script`) for :func:`stale_figures`.
    """
    problems, cache = [], {} if cache is None else cache
    for entry in entries:
        page, lead_in, _ = entry
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        start, end = output_block(text, lead_in)
        today = as_block(printed(entry, cache))
        if same(text[start:end], today) and not (write and timings):
            continue
        today = today if timings else with_timings(today, text[start:end])
        diff = difflib.unified_diff(
            text[start:end].splitlines(), today.splitlines(), "page", "today", lineterm=""
        )
        problems.append(f"{page}, the block after {lead_in!r}:\n" + "\n".join(diff))
        if write:
            path.write_text(text[:start] + today + text[end:], encoding="utf-8")
    return problems


def same_image(shown, today):
    """Whether two PNG files show the same figure: the same size, and at most 0.1 % of the
    pixels changed by more than a quarter of a channel's range (matplotlib builds may
    rasterize the edges of glyphs differently; a changed cell, curve or label changes more)."""
    import numpy as np
    from matplotlib.image import imread

    shown, today = (imread(io.BytesIO(data), format="png") for data in (shown, today))
    if shown.shape != today.shape:
        return False
    return bool(np.mean(np.abs(shown - today).max(axis=-1) > 0.25) <= 0.001)


def stale_figures(entries=FIGURES, *, write=False, cache=None):
    """The committed images of ``entries`` (rows of :data:`FIGURES`) that differ from what
    their script draws today, one line each; with ``write``, rewritten."""
    problems, cache = [], {} if cache is None else cache
    for image, (script, arguments), name in entries:
        _, figures = run_script(script, arguments, cache)
        path = ROOT / image
        if path.is_file() and same_image(path.read_bytes(), figures[name]):
            continue
        problems.append(f"{image}: not the {name} that {script} draws today")
        if write:
            path.write_bytes(figures[name])
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    parser.add_argument(
        "--timings", action="store_true", help="write the measured timings (on quiet cores)"
    )
    parser.add_argument("--run-blocks", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.run_blocks:
        outputs = run_blocks(options.run_blocks)
        print(json.dumps(outputs))
        return 0
    cache = {}
    problems = stale_blocks(write=not options.check, timings=options.timings, cache=cache)
    problems += stale_figures(write=not options.check, cache=cache)
    for problem in problems:
        print(problem, end="\n\n")
    if options.check:
        return 1 if problems else 0
    print(f"{len(problems)} output(s) rewritten" if problems else "every output is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
