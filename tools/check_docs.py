"""Check a built docs site: the pages a reader needs are there, and render.

    python tools/check_docs.py [docs/_build/html] [--screenshots DIR]

Fails (exit 1, one line per problem) if the API page of ``NDClassifier`` (or of another
estimator, the target of its HTML repr's "?" link) is missing, if the gallery lacks a page
for a script of ``examples/``, or if the gallery shows no figure. With ``--screenshots``, a
headless Chromium (``chromium`` or ``chromium-browser`` on PATH) also renders the
NDClassifier page and the gallery to PNG files in DIR, and the check fails if either image
is blank. ``make docs`` runs it without screenshots.
"""

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]


def check_site(site):
    problems = []
    from sknd import NDClassifier, NDRegressor, NDTransformer

    for estimator in (NDClassifier, NDRegressor, NDTransformer):
        link = estimator()._get_doc_link()
        # The repr links to .../api/generated/sknd.<Name>.html on the published site.
        relative = urlsplit(link).path.split("/en/latest/", 1)[-1]
        page = site / relative
        if not link or not page.is_file():
            problems.append(f"{estimator.__name__}: repr link {link!r} has no page {page}")
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
        for page in (site / "auto_examples").glob("*.html"):
            for src in re.findall(r'<img[^>]+src="([^"]*sphx_glr_[^"]+\.png)"',
                                  page.read_text(encoding="utf-8")):
                if "thumb" not in src and (page.parent / src).is_file():
                    figures.append(src)
        if not figures:
            problems.append("gallery: no example shows a figure")
    return problems


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
        print(f"check_docs: {args.site} has the NDClassifier API page and the gallery")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
