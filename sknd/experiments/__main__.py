"""``python -m sknd.experiments``: run the paper's protocol and write a report."""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
