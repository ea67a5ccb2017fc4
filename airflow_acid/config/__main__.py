"""``python -m airflow_acid.config --markdown``: print the reference page docs/configuration.md."""

from __future__ import annotations

import argparse
import sys

from airflow_acid.config.reference import markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airflow_acid.config", description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print docs/configuration.md")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
