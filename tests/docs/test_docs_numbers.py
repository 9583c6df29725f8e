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
- The docstrings and comments of ``sknd/`` quote no measured figure (an accuracy, a
  speed-up, a time, a drop in points, an R²) outside a docstring example and its output:
  they say why a choice holds and name the section of ``benchmarks/RESULTS.md`` that
  measured it, where a rerun updates the figure.

``tests/docs/test_docs_figures.py`` checks the experiments tables and the numbers quoted from
them against ``docs/results/``.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest

from sknd import NDClassifier

ROOT = Path(__file__).resolve().parents[2]
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


#: A measured figure in code text: an accuracy in % (two decimals, 10.00-99.99); a ratio
#: (``2.4x``, ``2-3x``, ``1.5 x``); a time (``0.6 ms``, ``1-2 s``); a size with decimals
#: (``0.37 MB``); a drop or gain in points (``0.8-1.1 points``); a change in per cent
#: (``40 % slower``); a rate (``46 Mpx/s``); an R² (``R² 0.891``). Not a setting
#: (``lr=1e-3``, ``0.01``, ``10 %``, ``batch 200``, ``100 units``, ``64 MiB``), a version, a
#: date or a shape (``3 x 3``).
_SPAN = r"(?<![\w.])\d+(?:\.\d+)?(?:\s?[-–]\s?\d+(?:\.\d+)?)?"
CODE_FIGURE = re.compile(
    "|".join(
        [
            r"(?<![\w.])[1-9]\d\.\d{2}(?![\w.])",
            rf"{_SPAN}[x×](?!\w)",
            r"(?<![\w.])\d+\.\d+ [x×](?! ?\d)",
            rf"{_SPAN} ?(?:s|ms|µs|us|ns|seconds?|minutes?|min)(?![\w²])",
            r"(?<![\w.])\d+\.\d+ ?[kKMGT]i?B\b",
            rf"{_SPAN} (?:percentage )?points?\b",
            rf"{_SPAN} ?% (?:faster|slower|more|less|smaller|larger)\b",
            rf"{_SPAN} ?(?:[kMG]px|[kMG]B|rows)/s\b",
            r"\bR(?:2|²|\^2)(?![\w.])[^\d\n]{0,16}?\d*\.\d+",
        ]
    )
)


def _doc_spans(tree):
    """The source lines of each docstring (a string statement anywhere, an attribute's too)
    and of each string constant a module assigns (the shared docstring sections)."""
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr))
    ]
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            strings += [n for n in ast.walk(node.value) if isinstance(n, ast.Constant)]
    return [
        range(node.lineno, node.end_lineno + 1)
        for node in strings
        if isinstance(node, ast.JoinedStr) or isinstance(node.value, str)
    ]


def _outside_examples(lines, span):
    """The numbers in ``span`` of the lines that are not a ``>>>`` example, its ``...``
    continuations or its output (the lines after it up to a blank line)."""
    kept, example = [], False
    for number in span:
        text = lines[number - 1].strip()
        example = text.startswith(">>>") or (example and bool(text))
        if not example:
            kept.append(number)
    return kept


def code_figures(source):
    """``(line, figure)`` for each measured figure in the comments and docstrings of a
    module's ``source``, outside the docstrings' examples."""
    lines = source.splitlines()
    texts = {}
    for span in _doc_spans(ast.parse(source)):
        for number in _outside_examples(lines, span):
            texts[number] = lines[number - 1]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            texts[token.start[0]] = token.string
    return [
        (number, match.group(0))
        for number, text in sorted(texts.items())
        for match in CODE_FIGURE.finditer(text)
    ]


@pytest.mark.parametrize(
    "path", sorted((ROOT / "sknd").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_code_quotes_no_measured_figures(path):
    found = [
        f"{path.relative_to(ROOT)}:{number}: {figure}"
        for number, figure in code_figures(path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "measured figures in docstrings or comments (say why the choice holds and name the "
        f"section of benchmarks/RESULTS.md that measured them, which holds the figure): {found}"
    )


@pytest.mark.parametrize(
    ("text", "figure"),
    [
        ("forest type 89.05 -> 88.52 clean", "89.05"),
        ("(2.4x faster than rows of a few)", "2.4x"),
        ("runs 2-3x slower", "2-3x"),
        ("a default fit 10x slower under load", "10x"),
        ("1.5 x as fast on a 1 Mpx scene", "1.5 x"),
        ("took 0.6 s, then the refinement", "0.6 s"),
        ("(1-2 s per pair of dtypes)", "1-2 s"),
        ("0.5-0.7 ms a step", "0.5-0.7 ms"),
        ("its file takes 0.37 MB", "0.37 MB"),
        ("they lost 0.8-1.1 points", "0.8-1.1 points"),
        ("lost 9 points of R2", "9 points"),
        ("ran about 40 % slower", "40 % slower"),
        ("H200: 46 Mpx/s in chunks", "46 Mpx/s"),
        ("an R² of 0.9885 on the test rows", "R² of 0.9885"),
        ("R2 = 0.91", "R2 = 0.91"),
    ],
)
def test_code_figure_pattern_finds_measured_figures(text, figure):
    assert figure in [match.group(0) for match in CODE_FIGURE.finditer(text)]


@pytest.mark.parametrize(
    "text",
    [
        "lr=1e-3, weight_decay 0.01",
        "noise at 10 % of the signal",
        "a hidden layer of 100 units, batch 200",
        "scikit-learn 1.6.1 (2024-11-05)",
        "a 3 x 3 neighbourhood of 4096 x 4096 pixels",
        "bounds the screening's memory to ~32 MiB",
        "tol 1e-4 and 0.5 as the threshold",
        "float32x4 and 0x1F",
        "the R2 score on 250 bands",
        "2 x n_outputs hidden units",
    ],
)
def test_code_figure_pattern_leaves_settings(text):
    assert CODE_FIGURE.findall(text) == []


def test_code_figures_skip_examples_only():
    source = '''"""Module.

>>> score(X,
...       y)
83.90

The recipe scored 83.90 (benchmarks/RESULTS.md).
"""
X_DOC = """\\
    took 1.9 s
"""
x = 1  # 2.4x faster
def f():
    raise ValueError("a message at 50.00")
'''
    assert code_figures(source) == [(7, "83.90"), (10, "1.9 s"), (12, "2.4x")]
