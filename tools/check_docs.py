r"""Check a built docs site: the pages a reader needs are there, and render.

    python tools/check_docs.py [docs/_build/html] [--screenshots DIR]

Fails (exit 1, one line per problem) if the API page of ``NDClassifier`` (or of another
estimator) is missing, if an estimator's HTML repr links anywhere (the docs are not hosted:
its "?" and parameter links would lead nowhere), if a "[docs]" link of the highlighted
sources points at an anchor its page lacks, if the gallery lacks a page for a script of
``examples/``, if the gallery shows no figure or prints a path of the build machine (the
checkout, the temporary directory, the build folder), if a page's text outside code and
rendered math shows raw LaTeX (``$``, ``\(``, ``\[``, ``\frac``...: math MathJax will not render, such
as a Markdown ``$...$`` span broken by a line that starts with ``+``), or if a page loads
MathJax from elsewhere than the site (offline, its formulas would stay raw LaTeX) or
without MathJax's license beside it. With ``--screenshots``, a headless Chromium
(``chromium`` or ``chromium-browser`` on PATH) also renders the NDClassifier page and the
gallery to PNG files in DIR, and the check fails if either image is blank. ``make docs``
runs it without screenshots.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def check_site(site):
    problems = []
    from sknd import NDClassifier, NDRegressor, NDTransformer

    for estimator in (NDClassifier, NDRegressor, NDTransformer):
        if "href=" in estimator()._repr_html_():
            problems.append(f"{estimator.__name__}: the HTML repr links to an unhosted site")
        page = site / "api" / "generated" / f"sknd.{estimator.__name__}.html"
        if not page.is_file():
            problems.append(f"{estimator.__name__}: no API page {page}")
            continue
        text = page.read_text(encoding="utf-8")
        for needed in (f"sknd.{estimator.__name__}", "Parameters", "fit"):
            if needed not in text:
                problems.append(f"{page}: no {needed!r}")

    gallery = site / "auto_examples" / "index.html"
    if not gallery.is_file():
        problems.append(f"gallery index missing: {gallery}")
    else:
        index = gallery.read_text(encoding="utf-8")
        for script in sorted((ROOT / "examples").glob("*.py")):
            page = site / "auto_examples" / f"{script.stem}.html"
            if not page.is_file() or f"{script.stem}.html" not in index:
                problems.append(f"gallery: no page for examples/{script.name}")
        figures = []
        # What the examples print: no path of the machine that built the site.
        machine_paths = (
            str(ROOT),
            str(Path(tempfile.gettempdir()).resolve()) + "/",
            "docs/_build/",  # the examples' output folder during the build, relative
        )
        for page in (site / "auto_examples").glob("*.html"):
            html = page.read_text(encoding="utf-8")
            for path in machine_paths:
                if path in html:
                    problems.append(f"gallery: {page.name} shows the build machine's path {path}")
            for src in re.findall(r'<img[^>]+src="([^"]*sphx_glr_[^"]+\.png)"', html):
                if "thumb" not in src and (page.parent / src).is_file():
                    figures.append(src)
        if not figures:
            problems.append("gallery: no example shows a figure")
    problems += raw_math(site)
    problems += broken_source_links(site)
    return problems


def broken_source_links(site):
    """Problems: "[docs]" links of the highlighted sources (sphinx.ext.viewcode) to an anchor
    their page lacks."""
    problems, anchors = [], {}
    for source in sorted((site / "_modules").rglob("*.html")):
        for href in re.findall(r'class="viewcode-back" href="([^"]+)"', source.read_text("utf-8")):
            path, _, anchor = href.partition("#")
            page = (source.parent / path).resolve()
            if page not in anchors:
                text = page.read_text("utf-8") if page.is_file() else ""
                anchors[page] = set(re.findall(r'\bid="([^"]+)"', text))
            if not page.is_file() or (anchor and anchor not in anchors[page]):
                problems.append(f"{source.relative_to(site)}: [docs] link {href} leads nowhere")
    return problems


# Text MathJax leaves alone: Sphinx puts formulas in elements of class "math", MyST marks
# everything else mathjax_ignore. A $, \( or \[ or a LaTeX command elsewhere is raw LaTeX.
_RAW_MATH = re.compile(r"\$|\\[()\[\]]|\\[A-Za-z]{2,}")
_LITERAL_TAGS = {"pre", "code", "kbd", "samp", "tt", "script", "style", "textarea", "head"}
_VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
              "source", "track", "wbr"}


class _ProseText(HTMLParser):
    """Collects a page's text outside code, scripts and math elements."""

    def __init__(self):
        super().__init__()
        self.stack = []  # (tag, skipped) of the open elements
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag in _VOID_TAGS:
            return
        classes = (dict(attrs).get("class") or "").split()
        skipped = tag in _LITERAL_TAGS or "math" in classes or "highlight" in classes
        self.stack.append((tag, skipped or (bool(self.stack) and self.stack[-1][1])))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        if not (self.stack and self.stack[-1][1]):
            self.text.append(data)


def raw_math(site):
    """Problems: raw LaTeX in the text of the site's pages; MathJax not bundled."""
    problems = []
    pages = sorted(page for page in site.rglob("*.html")
                   if "_modules" not in page.relative_to(site).parts)  # highlighted source
    for page in pages:
        html = page.read_text(encoding="utf-8")
        parser = _ProseText()
        parser.feed(html)
        text = " ".join(" ".join(parser.text).split())
        for match in list(_RAW_MATH.finditer(text))[:3]:
            snippet = text[max(0, match.start() - 40):match.end() + 40]
            problems.append(f"{page.relative_to(site)}: raw math in the text: ...{snippet}...")
        for src in re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', html, re.IGNORECASE):
            script = (page.parent / src.split("?")[0]).resolve()
            if "://" in src or not script.is_file():
                problems.append(f"{page.relative_to(site)}: MathJax from {src}, not from the site")
            elif not (script.parent / "LICENSE").is_file():
                problems.append(f"{script.parent}: MathJax without its LICENSE")
    return list(dict.fromkeys(problems))  # a bundle's problem once, not once per page


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    return None


def screenshots(site, out):
    browser = _browser()
    if browser is None:
        return ["--screenshots: no chromium on PATH (apt-get install chromium)"]
    import matplotlib.image as mpimg

    out.mkdir(parents=True, exist_ok=True)
    problems = []
    pages = {"ndclassifier": site / "api" / "generated" / "sknd.NDClassifier.html",
             "gallery": site / "auto_examples" / "index.html"}
    for name, page in pages.items():
        png = out / f"{name}.png"
        png.unlink(missing_ok=True)
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--screenshot={png}", "--window-size=1280,900",
                        page.resolve().as_uri()],
                       capture_output=True, timeout=120, check=False)
        if not png.is_file():
            problems.append(f"screenshot of {page} not written")
            continue
        pixels = mpimg.imread(png)
        if pixels.std() < 0.02:  # one flat colour: nothing rendered
            problems.append(f"screenshot {png} is blank")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=ROOT / "docs" / "_build" / "html", type=Path)
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args(argv)
    problems = check_site(args.site)
    if args.screenshots is not None and not problems:
        problems += screenshots(args.site, args.screenshots)
    for problem in problems:
        print(f"check_docs: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_docs: {args.site} has the NDClassifier API page and the gallery, "
              "bundled MathJax and no raw math")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
