#!/usr/bin/env python3
"""The recipes are true: every file ARCHITECTURE.md's "Adding things" names exists.

A path is a span in backticks with a `/` that ends in an extension (`core/src/step.rs`) or in
`/` (a directory), or a Markdown file of the root (`README.md`); `NAME`, `X` and `Y` in a path
stand for any name (`sql/pg_labels--X--Y.sql` must match at least one file). The section must
hold the recipes for a rule, a step kind and a framework guard.

Exit status 1 with the findings when something does not hold.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPES = ("**A rule**", "**A step kind**", "**A framework guard**")
PATH = re.compile(r"`([A-Za-z0-9_.\-/]*/[A-Za-z0-9_.\-/]*)`")
ROOT_DOC = re.compile(r"`([A-Z][A-Z_]*\.md)`")
PLACEHOLDER = re.compile(r"(?<![A-Za-z0-9])(NAME|X|Y)(?![A-Za-z0-9])")


def section(text, title):
    start = text.find(f"\n## {title}\n")
    if start < 0:
        return None
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def main():
    findings = []
    text = open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8").read()
    adding = section(text, "Adding things")
    if adding is None:
        print('ARCHITECTURE.md: no section "## Adding things"')
        return 1
    for recipe in RECIPES:
        if f"- {recipe}" not in adding:
            findings.append(f'ARCHITECTURE.md, "Adding things": no recipe {recipe}')
    paths = sorted(
        {p for p in PATH.findall(adding) if p.endswith("/") or re.search(r"\.[A-Za-z0-9]+$", p)}
        | set(ROOT_DOC.findall(adding))
    )
    for path in paths:
        pattern = PLACEHOLDER.sub("*", path)
        if pattern != path:
            found = glob.glob(os.path.join(ROOT, pattern))
        else:
            found = os.path.exists(os.path.join(ROOT, path))
        if not found:
            findings.append(f'ARCHITECTURE.md, "Adding things" names {path}, which does not exist')
    if findings:
        print("\n".join(findings))
        print(f"recipes: {len(findings)} findings")
        return 1
    named = f'{len(paths)} paths named in ARCHITECTURE.md\'s "Adding things"'
    print(f"recipes: ok ({named}, all there)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
