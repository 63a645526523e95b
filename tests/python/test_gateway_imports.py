"""The MCP gateway (pg_labels.mcp) uses the package's public API only: it imports from
pg_labels names of its ``__all__`` or a public module of the package (``pg_labels.timely``),
and nothing from the package's private modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pg_labels

GATEWAY = Path(__file__).resolve().parents[2] / "python" / "src" / "pg_labels" / "mcp"


def test_the_gateway_imports_public_names_only() -> None:
    found = []
    for path in sorted(GATEWAY.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                private = node.level > 1 or (
                    module.startswith("pg_labels.")
                    and any(part.startswith("_") for part in module.split("."))
                )
                names = [a.name for a in node.names]
                if private or (
                    module == "pg_labels" and not set(names) <= set(pg_labels.__all__)
                ):
                    found.append(f"{path.name}:{node.lineno}: from {module} import {names}")
            elif isinstance(node, ast.Import):
                found += [
                    f"{path.name}:{node.lineno}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("pg_labels.")
                ]
    assert found == [], "\n".join(found)
