#!/usr/bin/env python3
"""Generate the synchronous twins of the Python package's async code (and of its async tests),
as psycopg generates its sync code from its async code (its tools/async_to_sync.py).

    python3 python/tools/async_to_sync.py          write every twin (TWINS below)
    python3 python/tools/async_to_sync.py --check  regenerate into a temporary directory and
                                                   fail, showing the difference, when a
                                                   committed twin is not what it would be

The transform reads the async source's syntax tree and edits the source text where the tree
says, so comments and layout are kept:

* ``async def``, ``async with`` and ``async for`` lose ``async``; ``await x`` is ``x`` (and
  ``(await x).y`` is ``x.y``);
* the names of a twin's table are renamed wherever they are names: variables, attributes,
  parameters, keywords, definitions, imported names and modules, and words of string
  literals (messages, ``repr``); docstrings are copied as written (they speak of both forms);
* a union that renaming made repeat a member (``AsyncRun | Run``) keeps the first;
* a statement whose first line ends with the comment ``# async only`` is left out;
* imported names the twin no longer uses are left out, and the imports sorted as ruff's isort.

Only the standard library: the check runs in the python suite (tests/python/test_generated.py).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINE_LENGTH = 100
ASYNC_ONLY = "# async only"

#: The names of the async code and of its twin: pg_labels' own, psycopg's, the standard
#: library's.
NAMES: Mapping[str, str] = {
    "AsyncPlatform": "Platform",
    "AsyncRun": "Run",
    "AsyncConnection": "Connection",
    "AsyncPsycopgExecutor": "PsycopgExecutor",
    "executor_async": "executor",
    "register_async": "register",
    "_psycopg_async": "_psycopg_sync",
    "_async": "_sync",
    "AsyncIterator": "Iterator",
    "AbstractAsyncContextManager": "AbstractContextManager",
    "asynccontextmanager": "contextmanager",
    "AsyncPipeline": "Pipeline",
}

#: The async tests' fixtures and helpers, and their sync twins' (tests/python/conftest.py).
TEST_NAMES: Mapping[str, str] = {
    **NAMES,
    "aplatform": "platform",
    "aapprover": "approver",
    "adba": "dba",
    "aconnect": "connect",
}


@dataclass(frozen=True)
class Twin:
    source: str
    target: str
    names: Mapping[str, str]


_PLATFORM = "python/src/pg_labels/_platform"
TWINS = (
    Twin(f"{_PLATFORM}/_psycopg_async.py", f"{_PLATFORM}/_psycopg_sync.py", NAMES),
    Twin(f"{_PLATFORM}/_async.py", f"{_PLATFORM}/_sync.py", NAMES),
    Twin("tests/python/test_platform_async.py", "tests/python/test_platform.py", TEST_NAMES),
)


# ---------------------------------------------------------------------------------------------
# The transform
# ---------------------------------------------------------------------------------------------


class _Source:
    """The source as bytes (the tree's columns count UTF-8 bytes) and its edits."""

    def __init__(self, text: str) -> None:
        self.data = text.encode()
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.edits: list[tuple[int, int, bytes]] = []

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.at(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.at(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def line_of(self, line: int) -> bytes:
        return self.data[self.starts[line - 1] : self.starts[line]]

    def edit(self, start: int, end: int, text: str | bytes) -> None:
        self.edits.append((start, end, text.encode() if isinstance(text, str) else text))

    def drop_keyword(self, start: int, keyword: bytes) -> None:
        """Remove ``keyword`` and the blanks after it, at ``start``."""
        if not self.data.startswith(keyword, start):
            raise ValueError(f"no {keyword!r} at byte {start}")
        end = start + len(keyword)
        while self.data[end : end + 1] in (b" ", b"\t"):
            end += 1
        self.edit(start, end, b"")

    def applied(self) -> str:
        """The source with the edits; an edit inside another (a name in a dropped union
        member) is left out, edits that overlap otherwise are a bug."""
        out, last = [], 0
        for start, end, text in sorted(self.edits, key=lambda e: (e[0], -e[1])):
            if start < last:
                if end <= last:
                    continue
                raise AssertionError(f"overlapping edits at byte {start}")
            out += [self.data[last:start], text]
            last = end
        out.append(self.data[last:])
        return b"".join(out).decode()


def _words(names: Mapping[str, str]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len)[::-1])) + r")\b")


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and isinstance(
            parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        )
        and parent.body[0] is node
    )


# Where parentheses around an ``await`` can only be grouping ones.
_GROUPING_PARENTS = (
    ast.Attribute,
    ast.Subscript,
    ast.Compare,
    ast.Assert,
    ast.Return,
    ast.Assign,
    ast.AnnAssign,
    ast.Expr,
)
_PRIMARY = (ast.Call, ast.Attribute, ast.Name, ast.Subscript)


class _Unasync:
    def __init__(self, source: _Source, names: Mapping[str, str]) -> None:
        self.src = source
        self.names = names
        self.words = _words(names)

    def rename_at(self, start: int, name: str) -> None:
        if name in self.names:
            if self.src.data[start : start + len(name)] != name.encode():
                raise ValueError(f"{name} is not at byte {start}")
            self.src.edit(start, start + len(name), self.names[name])

    def rename_words(self, node: ast.AST) -> None:
        start, end = self.src.span(node)
        text = self.src.data[start:end].decode()
        new = self.words.sub(lambda m: self.names[m.group(1)], text)
        if new != text:
            self.src.edit(start, end, new)

    def definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        start = self.src.at(node.lineno, node.col_offset)
        m = re.compile(rb"(async\s+)?(def|class)\s+").match(self.src.data, start)
        if m is None:
            raise ValueError(f"no definition of {node.name} at line {node.lineno}")
        if m.group(1):
            self.src.drop_keyword(start, b"async")
        self.rename_at(m.end(), node.name)

    def union(self, node: ast.BinOp) -> None:
        """Leave out a member of ``a | b | ...`` that renaming made repeat."""
        members: list[ast.expr] = []
        current: ast.expr = node
        while isinstance(current, ast.BinOp) and isinstance(current.op, ast.BitOr):
            members.insert(0, current.right)
            current = current.left
        members.insert(0, current)
        seen: set[str] = set()
        for i, member in enumerate(members):
            start, end = self.src.span(member)
            key = self.words.sub(
                lambda m: self.names[m.group(1)], self.src.data[start:end].decode()
            )
            if key in seen:
                self.src.edit(self.src.span(members[i - 1])[1], end, b"")
            seen.add(key)

    def await_(self, node: ast.Await, parent: ast.AST | None) -> None:
        start, end = self.src.span(node)
        self.src.drop_keyword(start, b"await")
        if not isinstance(parent, _GROUPING_PARENTS) or not isinstance(node.value, _PRIMARY):
            return
        before = self.src.data[:start].rstrip()
        after_at = end + len(self.src.data[end:]) - len(self.src.data[end:].lstrip())
        if before.endswith(b"(") and self.src.data[after_at : after_at + 1] == b")":
            self.src.edit(len(before) - 1, start, b"")
            self.src.edit(end, after_at + 1, b"")

    def visit(self, node: ast.AST, parent: ast.AST | None = None) -> None:
        if isinstance(node, ast.stmt):
            first = self.src.line_of(node.lineno).decode().rstrip()
            if first.endswith(ASYNC_ONLY) or ASYNC_ONLY + ":" in first:
                start = self.src.starts[node.lineno - 1]
                self.src.edit(start, self.src.starts[node.end_lineno or node.lineno], b"")
                return
        if _is_docstring(node, parent) or isinstance(node, (ast.ImportFrom, ast.Import)):
            return  # docstrings as written; imports once the rest is done (_imports)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.definition(node)
        elif isinstance(node, (ast.AsyncWith, ast.AsyncFor)):
            self.src.drop_keyword(self.src.at(node.lineno, node.col_offset), b"async")
        elif isinstance(node, ast.Await):
            self.await_(node, parent)
        elif isinstance(node, ast.Name):
            self.rename_at(self.src.at(node.lineno, node.col_offset), node.id)
        elif isinstance(node, ast.Attribute):
            end = self.src.at(node.end_lineno or node.lineno, node.end_col_offset or 0)
            self.rename_at(end - len(node.attr), node.attr)
        elif isinstance(node, ast.arg):
            self.rename_at(self.src.at(node.lineno, node.col_offset), node.arg)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            self.rename_at(self.src.at(node.lineno, node.col_offset), node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.rename_words(node)
        elif isinstance(node, ast.JoinedStr):
            self.rename_words(node)  # its text and its expressions at once
            return
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.BitOr))
        ):
            self.union(node)
        for child in ast.iter_child_nodes(node):
            self.visit(child, node)


def _member_key(name: str) -> tuple[int, str, str]:
    """ruff's isort order of imported names: constants, classes, then the rest."""
    if len(name) > 1 and name.isupper():
        kind = 0
    elif name[0].isupper():
        kind = 1
    else:
        kind = 2
    return kind, name.lower(), name


def _import_text(node: ast.ImportFrom, aliases: list[ast.alias], indent: str, split: bool) -> str:
    module = "." * node.level + (node.module or "")
    names = [a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases]
    line = f"{indent}from {module} import {', '.join(names)}"
    if not split and len(line) <= LINE_LENGTH:
        return line
    inner = "".join(f"{indent}    {n},\n" for n in names)
    return f"{indent}from {module} import (\n{inner}{indent})"


def _imports(text: str, names: Mapping[str, str]) -> str:
    """Rename the imported names and modules, leave out the names the code no longer uses
    (and repeats), sort what is left."""
    tree = ast.parse(text)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    src = _Source(text)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        module = node.module
        if module is not None:
            module = ".".join(names.get(part, part) for part in module.split("."))
        aliases: list[ast.alias] = []
        for alias in node.names:
            name = names.get(alias.name, alias.name)
            asname = None if alias.asname is None else names.get(alias.asname, alias.asname)
            bound = asname or name
            if bound in used and all((a.name, a.asname) != (name, asname) for a in aliases):
                aliases.append(ast.alias(name=name, asname=asname))
        aliases.sort(key=lambda a: _member_key(a.name))
        original = [(a.name, a.asname) for a in node.names]
        if module == node.module and [(a.name, a.asname) for a in aliases] == original:
            continue
        start, end = src.span(node)
        if not aliases:
            line_start = src.starts[node.lineno - 1]
            src.edit(line_start, src.starts[node.end_lineno or node.lineno], b"")
            continue
        indent = " " * node.col_offset
        split = src.data[start:end].rstrip().endswith(b",)") or b",\n" in src.data[start:end]
        renamed = ast.ImportFrom(module=module, names=aliases, level=node.level)
        src.edit(start, end, _import_text(renamed, aliases, indent, split).lstrip())
    return src.applied()


def unasync(text: str, names: Mapping[str, str], source: str) -> str:
    """The sync twin of the async module ``text`` (whose path is ``source``)."""
    src = _Source(text)
    _Unasync(src, names).visit(ast.parse(text))
    out = _imports(src.applied(), names)
    out = re.sub(r"\n{4,}", "\n\n\n", out)  # a statement left out leaves no gap behind
    header = (
        f"# Generated from {Path(source).name} by python/tools/async_to_sync.py: do not edit.\n"
        f"# Edit {source}\n"
        "# and run the script; the python suite checks that this file is what it generates.\n"
    )
    return header + out


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def generated(root: Path = ROOT) -> Iterator[tuple[Twin, str]]:
    for twin in TWINS:
        text = (root / twin.source).read_text(encoding="utf-8")
        yield twin, unasync(text, twin.names, twin.source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory; fail when a committed twin differs",
    )
    args = parser.parse_args(argv)
    stale = []
    with tempfile.TemporaryDirectory(prefix="async_to_sync.") as tmp:
        for twin, text in generated():
            target = ROOT / twin.target
            if not args.check:
                target.write_text(text, encoding="utf-8")
                print(f"{twin.target}: generated from {twin.source}")
                continue
            fresh = Path(tmp) / Path(twin.target).name
            fresh.write_text(text, encoding="utf-8")
            current = target.read_text(encoding="utf-8") if target.exists() else ""
            if current != fresh.read_text(encoding="utf-8"):
                stale.append(twin)
                sys.stdout.writelines(
                    difflib.unified_diff(
                        current.splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        f"{twin.target} (committed)",
                        f"{twin.target} (generated from {twin.source})",
                    )
                )
    for twin in stale:
        print(
            f"{twin.target} is not what {twin.source} generates: "
            "run python3 python/tools/async_to_sync.py",
            file=sys.stderr,
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
