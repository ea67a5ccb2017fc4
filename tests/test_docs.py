"""The repository explains itself: source files point into ``docs/`` (never to documents outside the repository), and
every relative link and anchor in the README and ``docs/`` resolves."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("airflow_acid", "dags", "bench")
SOURCE_FILES = ("setup.cfg", "pyproject.toml")
MARKDOWN_FILES = ("README.md", "CHANGELOG.md", "dags/README.md", "plugins/README.md")

# Documents that live beside the repository, not in it, and the section-sign anchors into them (spelled in pieces
# so that this file does not name them itself).
OUTSIDE_NAMES = ("HIVE_ACID" + "_SPEC", "DESIGN" + r"\.md", "AIRFLOW" + "_NOTES", "\N{SECTION SIGN}", r"\.\./shared")
OUTSIDE_REFERENCE = re.compile("|".join(OUTSIDE_NAMES))
DOCS_REFERENCE = re.compile(r"docs/([\w.-]+\.md)(?:#([\w-]+))?")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def source_files() -> list[Path]:
    """Python files of the package, the DAGs and the benchmarks, plus the packaging files."""
    files = [path for folder in SOURCE_DIRS for path in sorted((REPO / folder).rglob("*.py"))]
    return files + [REPO / name for name in SOURCE_FILES if (REPO / name).exists()]


def markdown_files() -> list[Path]:
    """The README, the changelog, the folder READMEs and every page of ``docs/``."""
    return [REPO / name for name in MARKDOWN_FILES if (REPO / name).exists()] + sorted((REPO / "docs").glob("*.md"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of a Markdown file (repeated headings get -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_code = not in_code
            continue
        match = HEADING.match(line)
        if in_code or match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_docs_folder_exists() -> None:
    assert (REPO / "docs" / "index.md").is_file()
    assert (REPO / "docs" / "hive-acid.md").is_file()


def test_source_never_points_outside_the_repository() -> None:
    """Docstrings and comments name ``docs/`` pages, not the Hive spec or design notes beside the repository."""
    offending = [
        f"{rel(path)}:{number}: {line.strip()}"
        for path in source_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if OUTSIDE_REFERENCE.search(line)
    ]
    assert not offending, (
        f"{len(offending)} references resolve only outside the repository; point them to docs/hive-acid.md "
        "(Hive's rules), docs/architecture.md (the design) or docs/airflow.md instead:\n" + "\n".join(offending[:50]))


def test_source_references_to_docs_resolve() -> None:
    """Every ``docs/<page>.md#<anchor>`` named in a source file exists."""
    broken = []
    for path in source_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for page, anchor in DOCS_REFERENCE.findall(line):
                target = REPO / "docs" / page
                if not target.is_file():
                    broken.append(f"{rel(path)}:{number}: docs/{page} does not exist")
                elif anchor and anchor not in anchors(target):
                    broken.append(f"{rel(path)}:{number}: docs/{page} has no heading #{anchor}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("page", markdown_files(), ids=rel)
def test_markdown_links_resolve(page: Path) -> None:
    """Relative links of a page point to files that exist and, with ``#anchor``, to a heading they have."""
    broken = []
    in_code = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            in_code = not in_code
        if in_code:
            continue
        for target in MARKDOWN_LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: …
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (page.parent / file_part).resolve() if file_part else page
            if not resolved.exists():
                broken.append(f"{rel(page)}:{number}: {target} — {file_part} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{rel(page)}:{number}: {target} — no heading #{anchor} in {rel(resolved)}")
    assert not broken, "\n".join(broken)
