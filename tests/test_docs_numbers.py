"""The figures of the README and the docs come from one committed source, named beside them.

- A paragraph of ``README.md`` or ``docs/*.md`` that quotes a measured figure (a number
  with two decimals) names where it comes from: a committed run (``docs/results/``,
  ``benchmarks/RESULTS.md``), the script that measures it, or the page that holds it.
- The paragraphs in :data:`SOURCED` quote a section of ``benchmarks/RESULTS.md``: each of
  their decimal numbers is, to the precision quoted, a number of that section.
- The parameter counts that the front page and the ``recipe`` docstring give are those of
  fitted estimators.
- User-facing pages carry no development history: no issue numbers (the changelog holds
  them).

``tests/test_docs_figures.py`` checks the experiments tables and the numbers quoted from
them against ``docs/results/``.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from sknd import NDClassifier

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
PAGES = [README] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "changelog.md")

#: (page, a phrase of the paragraph, the heading (its start) of the RESULTS.md section quoted).
SOURCED = [
    ("README.md", 'A GPU (`device="cuda"`) replays', "### Training epochs as CUDA graphs"),
    ("README.md", "predicts a 10-band scene at", "### Current figures"),
    ("README.md", "Training sets larger than memory", "## Out-of-core training"),
    ("docs/raster.md", "A model set to use a GPU", "### Training epochs as CUDA graphs"),
    ("docs/raster.md", "which is why it runs at", "### Current figures"),
]
#: A measured figure: an accuracy in % (two decimals), a ratio (``0.67x``); not a version,
#: a setting (``lr=0.01``) or a processing baseline ("04.00").
FIGURE = re.compile(r"(?<![\w.])(?:[1-9]\d\.\d{2}(?![\w.])|\d{1,3}\.\d{2}\s?(?:%|x\b))")
DECIMAL = re.compile(r"(?<![\w.])\d+(?:,\d{3})*\.\d+(?![\d.])")
#: What names a source: a committed run, a script or test, a page, the experiments command.
SOURCE = re.compile(
    r"docs/results/|benchmarks/|examples/|tests/|\{doc\}|[\w/]+\.md\b|\]\(#|"
    r"python -m sknd\.experiments"
)
#: Development history: "issue 23", "issues 22 and 23", "issue #5", "the issue's target".
HISTORY = re.compile(r"\bissues? #?\d+|\bthe issue'?s\b", flags=re.IGNORECASE)


def paragraphs(text):
    """The prose paragraphs of a Markdown page (no tables, code blocks or headings)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if not line.lstrip().startswith(("|", "#"))]
        if lines:
            yield " ".join(" ".join(lines).split())


def section(text, heading):
    """The text under the heading that starts with ``heading``, to the next one as high."""
    match = re.search(rf"^{re.escape(heading)}.*$", text, flags=re.MULTILINE)
    assert match, f"no heading starting with {heading!r}"
    body = text[match.end() :]
    level = len(heading) - len(heading.lstrip("#"))
    end = re.search(rf"^#{{1,{level}}} ", body, flags=re.MULTILINE)
    return body[: end.start()] if end else body


def numbers(text):
    return [float(n.replace(",", "")) for n in DECIMAL.findall(text)]


def quotes(quoted, values):
    """Whether ``quoted`` (a string such as "7.2") rounds one of ``values``."""
    digits = len(quoted.split(".")[1])
    half = 0.5 * 10.0**-digits + 1e-9
    return any(abs(float(quoted.replace(",", "")) - v) <= half for v in values)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_figures_name_their_source(page):
    # A paragraph may also be introduced by the one before it: a lead-in ending in ":" that
    # names the source ("The report's line ... (docs/results/satimage):").
    paras = list(paragraphs(page.read_text(encoding="utf-8")))
    unsourced = [
        para[:120]
        for before, para in zip([""] + paras, paras)
        if FIGURE.search(para)
        and not SOURCE.search(para)
        and not (before.endswith(":") and SOURCE.search(before))
    ]
    assert not unsourced, (
        f"{page.name}: paragraphs quote figures without naming where they come from "
        f"(a docs/results/ run, benchmarks/RESULTS.md, the script or the page): {unsourced}"
    )


@pytest.mark.parametrize(("page", "phrase", "heading"), SOURCED, ids=[s[1] for s in SOURCED])
def test_quoted_figures_match_their_run(page, phrase, heading):
    found = [p for p in paragraphs((ROOT / page).read_text(encoding="utf-8")) if phrase in p]
    assert len(found) == 1, f"{page}: {len(found)} paragraphs contain {phrase!r}"
    paragraph = found[0]
    assert "benchmarks/RESULTS.md" in paragraph, (
        f"{page}: name benchmarks/RESULTS.md beside {phrase!r}"
    )
    values = numbers(section(RESULTS.read_text(encoding="utf-8"), heading))
    stale = [n for n in DECIMAL.findall(paragraph) if not quotes(n, values)]
    assert not stale, (
        f"{page}, the paragraph of {phrase!r}: {stale} are not in the section {heading!r} of "
        "benchmarks/RESULTS.md (quote its run, or name the run these come from)"
    )


def parameter_counts(recipe, architecture):
    """``n_parameters_`` at depths 2, 3 and 4 on 10 bands and a binary target."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(60, 10))
    y = (X[:, 1] > X[:, 2]).astype(int)
    counts = []
    for depth in (2, 3, 4):
        clf = NDClassifier(
            architecture=architecture,
            depth=depth,
            recipe=recipe,
            max_epochs=1,
            early_stopping=False,
        )
        counts.append(f"{clf.fit(X, y).n_parameters_:,}")
    return " / ".join(counts)


def test_front_page_gives_the_parameter_counts_of_both_recipes():
    text = " ".join((ROOT / "docs" / "index.md").read_text(encoding="utf-8").split())
    default, paper = text.split('`recipe="paper"`, use', 1)
    for architecture, label in [("nd", "ND"), ("mlp", "MLP"), ("attnd", "AttND")]:
        for recipe, part in [("sknd", default), ("paper", paper)]:
            counts = parameter_counts(recipe, architecture)
            quoted = re.escape(counts) + rf"(?: parameters)? \({label}\b"
            assert re.search(quoted, part), (
                f"docs/index.md: {label} under recipe={recipe!r} has {counts} parameters "
                "(benchmarks/recipe_param_counts.py --defaults)"
            )
    doc = " ".join(NDClassifier.__doc__.split())
    nd = [parameter_counts(recipe, "nd") for recipe in ("sknd", "paper")]
    quoted = re.escape(nd[0]) + r"[^.]* under ``\"sknd\"`` and " + re.escape(nd[1])
    assert re.search(quoted, doc), f"the recipe docstring must give {nd[0]} and {nd[1]}"


def test_user_pages_carry_no_issue_numbers():
    files = PAGES + sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "sknd").rglob("*.py"))
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, f"development history in user-facing text (CHANGELOG.md holds it): {found}"
