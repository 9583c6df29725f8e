"""The experiment results the docs publish are the experiments CLI's output, quoted alike.

``docs/experiments.md`` shows the reports of ``python -m sknd.experiments`` runs on the
shipped datasets, and ``README.md`` a summary of one of them. Each run's raw output
(``results.csv``, ``illumination.csv``, ``settings.json``, as the CLI wrote them) is
committed under ``docs/results/<run>/``. These tests rebuild each report's tables from
those files with :func:`sknd.experiments.write_report` (seconds, no training) and check

- every table row of the page's section for the run against the rebuilt report,
- the command and the wall time the section quotes against the run's own,
- the README's table and numbers, and those docs/training.md quotes, against the same
  results.

Rerunning a command of the page and copying its ``results.csv``, ``illumination.csv`` and
``settings.json`` to ``docs/results/<run>/`` is how the page gets new numbers; this test
then names every row of the page (and the README) that still shows the old ones.
"""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from sknd.experiments import (
    ExperimentResults,
    accuracy_table,
    noise_drop_table,
    parameter_table,
    write_report,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
EXPERIMENTS = ROOT / "docs" / "experiments.md"
README = ROOT / "README.md"

#: Committed run -> the heading of its section in docs/experiments.md.
RUNS = {
    "forest_type": "### forest_type (9 bands, 523 samples)",
    "satimage": "### satimage (36 features: 3 x 3 pixels x 4 bands, 6435 samples)",
    "satimage_center": "### satimage, centre pixel (4 bands, 6435 samples)",
    "forest_type_additive": "### Additive noise: forest_type",
    "satimage_center_additive": "### Additive noise: satimage, centre pixel",
}
#: The report's one line on the cost of illumination invariance, and the runs whose
#: section must quote it.
INVARIANCE_LINE = "**What invariance costs here:**"
QUOTES_INVARIANCE = {"satimage"}
#: What a section of a shipped dataset without a committed run must say of itself.
NOT_RERUN = "**From a previous version, not rerun.**"
SHIPPED_RUN = re.compile(r"python -m sknd\.experiments\s+--dataset\s+(forest_type|satimage)\b")


def load_run(name):
    folder = RESULTS / name
    settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
    return ExperimentResults(
        results=pd.read_csv(folder / "results.csv"),
        histories=pd.DataFrame(),
        coefficients=pd.DataFrame(),
        illumination=pd.read_csv(folder / "illumination.csv"),
        settings=settings,
        wall_time=settings["wall_time_s"],
    )


def section(text, heading):
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    assert heading in text, f"heading {heading!r} not found"
    body = text.split(heading, 1)[1]
    level = len(heading) - len(heading.lstrip("#"))
    end = re.search(rf"^#{{1,{level}}} ", body, flags=re.MULTILINE)
    return body[: end.start()] if end else body


def table_rows(text, *, headers=False):
    """The rows of the Markdown tables in ``text``: data rows, and header rows if asked."""
    rows, table = [], []
    for line in text.splitlines() + [""]:
        line = line.strip()
        if line.startswith("|"):
            table.append(line)
            continue
        if len(table) > 2:  # a header, a separator and data rows
            rows += ([table[0]] if headers else []) + table[2:]
        table = []
    return rows


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """``report(name)``: the report rebuilt from the committed run ``name``."""
    folder, texts = tmp_path_factory.mktemp("reports"), {}

    def rebuilt(name):
        if name not in texts:
            path = write_report(load_run(name), folder / name, figures=False)
            texts[name] = path.read_text(encoding="utf-8")
        return texts[name]

    return rebuilt


@pytest.mark.parametrize("name", list(RUNS))
def test_committed_run_is_whole(name):
    run = load_run(name)
    settings = run.settings
    assert settings["command"].startswith("python -m sknd.experiments")
    assert run.results["fold"].nunique() == settings["n_splits"]
    assert set(run.results["model"]) == set(settings["models"])


def test_every_shipped_dataset_section_is_checked_or_marked():
    text = EXPERIMENTS.read_text(encoding="utf-8")
    results = section(text, "## Results on the shipped datasets")
    headings = re.findall(r"^### .*$", results, flags=re.MULTILINE)
    checked = set(RUNS.values())
    for heading in headings:
        body = section(results, heading)
        if heading in checked or not SHIPPED_RUN.search(" ".join(body.split())):
            continue
        assert NOT_RERUN in body, (
            f"{heading!r} shows a run of a shipped dataset that is not committed under "
            f"docs/results/: commit it (and add it to RUNS) or mark the section {NOT_RERUN!r}"
        )
    assert checked <= set(headings)


@pytest.mark.parametrize("name", list(RUNS))
def test_experiments_page_quotes_the_run(name, report):
    text = section(EXPERIMENTS.read_text(encoding="utf-8"), RUNS[name])
    settings = load_run(name).settings
    flat = " ".join(text.split())
    assert f"`{settings['command']}`" in flat, f"{name}: the section must quote the run's command"
    wall = f"wall time {settings['wall_time_s']:.0f} s"
    assert wall in flat, f"{name}: the section must quote the run's {wall!r}"
    rows = table_rows(text, headers=True)
    assert len(rows) >= 10, f"{name}: no tables found in its section"
    report_rows = set(table_rows(report(name), headers=True))
    stale = [row for row in rows if row not in report_rows]
    assert not stale, f"{name}: rows not in the report rebuilt from docs/results/{name}: {stale}"
    # The report's line on what invariance costs, where the page quotes it (and it must
    # where the page's point is that cost), is the rebuilt report's word for word.
    quoted = [
        " ".join(paragraph.split())
        for paragraph in re.split(r"\n\s*\n", text)
        if paragraph.strip().startswith(INVARIANCE_LINE)
    ]
    assert quoted or name not in QUOTES_INVARIANCE, f"{name}: quote the report's {INVARIANCE_LINE}"
    rebuilt = " ".join(report(name).split())
    assert all(line in rebuilt for line in quoted), f"{name}: {quoted} not in the rebuilt report"


def test_readme_and_training_quote_the_forest_type_run(report):
    text = README.read_text(encoding="utf-8")
    summary = section(text, "## The paper's experiments on your data")
    run = load_run("forest_type")
    quoted = f"`{run.settings['command']}`, {run.settings['wall_time_s']:.0f} s"
    assert quoted in " ".join(summary.split()), f"README must quote {quoted!r}"

    # The table: the columns ND, MLP, AttND, scikit-learn MLP and p (ND vs MLP) of Table 1.
    full = {}
    for row in table_rows(section(report("forest_type"), "## Table 1.")):
        cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
        full[cells[0]] = cells
    labels = run.settings["model_labels"]
    order = ["Depth"] + [labels[m] for m in run.settings["depth_models"]]
    order += ["p (ND vs MLP, corrected)", "p (ND vs scikit-learn MLP, corrected)"]
    wanted = [order.index(c) for c in ("Depth", "ND", "MLP", "AttND", "scikit-learn MLP")]
    wanted.append(order.index("p (ND vs MLP, corrected)"))
    readme_rows = table_rows(summary)
    assert len(readme_rows) == len(full)
    for row in readme_rows:
        cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
        assert cells == [full[cells[0]][i] for i in wanted], row

    # The numbers of the text below the table.
    results = run.results
    acc = accuracy_table(results).set_index(["model", "depth"], drop=False)
    mean = {
        (m, None if pd.isna(d) else int(d)): f"{100 * v:.2f}"
        for (m, d), v in zip(acc.index, acc["mean"])
    }
    params = parameter_table(results)
    n_params = {
        (m, int(d)): f"{n:,.0f}"
        for m, d, n in zip(params["model"], params["depth"], params["n_parameters"])
        if not pd.isna(d)
    }
    expected = [
        f"ND has {n_params['nd', 2]} parameters at",
        f"depth 2 against the MLP's {n_params['mlp', 2]}",
        f"sknd's default recipe at depth 2: {mean['nd_sknd', 2]}",
        f"`passthrough=True` {mean['nd_sknd_passthrough', 2]}",
        f"`LogisticRegressionCV` on the bands {mean['logreg_bands', None]}",
        f"indices {mean['logreg_nd', None]}",
        f"best single classic index {mean['best_nd_pair', None]}",
        f"random forest {mean['random_forest', None]}",
        *noise_drop_phrases(results),
    ]
    flat = " ".join(summary.split())
    missing = [phrase for phrase in expected if phrase not in flat]
    assert not missing, f"README's summary disagrees with docs/results/forest_type: {missing}"

    # docs/training.md quotes the same run.
    training = " ".join((ROOT / "docs" / "training.md").read_text(encoding="utf-8").split())
    expected = [
        f"{mean['nd', 2]} % at depth 2 against {mean['logreg_nd', None]} % for a tuned",
        f"{mean['nd_sknd', 2]} % for the default recipe",
    ]
    missing = [phrase for phrase in expected if phrase not in training]
    assert not missing, f"docs/training.md disagrees with docs/results/forest_type: {missing}"


def noise_drop_phrases(results):
    """The README's drops under the paper's 10 % multiplicative noise, as the run has them."""
    table = noise_drop_table(results)
    drop = {
        (m, None if pd.isna(d) else int(d)): f"{v:.2f}"
        for m, d, v in zip(table["model"], table["depth"], table["drop"])
    }
    return [
        f"the default loses {drop['nd_sknd', 2]} points at depth 2",
        f"the paper's ND {drop['nd', 2]}",
        f"the scikit-learn MLP {drop['sklearn_mlp', 2]}",
        f"the logistic regression on the classic indices {drop['logreg_nd', None]}",
    ]


#: The sections of docs/training.md that table the default on forest type under another
#: protocol (a benchmark's folds, an earlier default): each names the reference figures.
OTHER_PROTOCOLS = ["## Measured", "## What it costs in robustness"]


def test_one_reference_for_the_default_on_forest_type():
    # One quantity, one value: the default's accuracy and noise drop on forest type are the
    # committed run's (README, docs/experiments.md); a section quoting another protocol's
    # figures for them points to those, so the pages never disagree without saying why.
    results = load_run("forest_type").results
    acc = accuracy_table(results).set_index(["model", "depth"])["mean"]
    accuracy = f"{100 * acc['nd_sknd', 2]:.2f} %"
    drop = noise_drop_phrases(results)[0].split()[3]
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    for heading in OTHER_PROTOCOLS:
        flat = " ".join(section(text, heading).split())
        pointers = [
            sentence
            for sentence in re.split(r"(?<=\.) ", flat)
            if "{doc}`experiments`" in sentence and accuracy in sentence
        ]
        assert pointers, (
            f"docs/training.md, {heading!r}: name the reference figure of the default on "
            f"forest type, {accuracy} ({{doc}}`experiments`), beside this section's own"
        )
        if "robustness" in heading:
            assert any(f"{drop} points" in p for p in pointers), f"{heading}: quote {drop}"
