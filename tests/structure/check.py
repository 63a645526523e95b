#!/usr/bin/env python3
"""The structure the code promises (ARCHITECTURE.md), checked:

- the extension's layers depend one way: pg <- types <- platform <- access (a module may use
  its own layer and those below, never one above);
- no module cycles, in the extension or in the core;
- the core has no pgrx and forbids unsafe code;
- no SQLSTATE literal outside core/src/sqlstate.rs;
- every `unsafe fn` in src/ (and every `unsafe extern` function) documents its contract in a
  `# Safety` section;
- one wall: only src/pg talks to PostgreSQL's C API. Outside it, no `pg_sys` (PostgreSQL's
  names the other layers need are re-exported one by one in src/pg/sys.rs, functions never),
  no `extern` block or function (a background worker's entry is `bgworker_main!`, SQL
  functions `sql_function!`), and every other `unsafe` says why on its line or in a `SAFETY:`
  comment just above (a type's datum access, a protocol's view made once per function);
- one version in Cargo.toml, META.json and the CHANGELOG, and a chain of upgrade scripts from
  every released version (sql/released/) to it;
- no SQL text made from values: in src/, no format!() (or string concatenation) makes a
  statement (statements built at run time are `pg::sql::Sql`, of the extension's own text,
  quoted identifiers and literals; values go as parameters), and raw SPI entry points are
  called only in src/pg/; in sql/, a dynamic statement's format() takes identifiers with %I
  and values with %L, and every %s says what it puts there (a comment `-- %s: ...` on its line
  or just above);
- rooms by concern: no Rust file of the extension, the core, the client or the verifier over
  500 lines, tests aside (a `tests.rs`, a file under `tests/`), and no list of exceptions;
  core's tests in files of their own beside their modules.

Exit status 1 with the findings when something does not hold.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYERS = ["pg", "types", "platform", "access"]

findings = []


def rust_files(base):
    for d, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith(".rs"):
                yield os.path.join(d, f)


def module_of(path, base):
    rel = os.path.relpath(path, base)[:-3]
    parts = rel.split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def references(text, known):
    """The modules of `known` a file refers to through `crate::...` paths (uses and calls)."""
    refs = set()
    for m in re.finditer(r"crate((?:::[a-z_][a-z0-9_]*)+)", text):
        path = m.group(1).strip(":").split("::")
        # the longest prefix that is a known module
        for n in range(len(path), 0, -1):
            cand = "::".join(path[:n])
            if cand in known:
                refs.add(cand)
                break
    # `use crate::{a, b}` groups
    for m in re.finditer(r"use crate::\{([^}]*)\}", text):
        for item in m.group(1).split(","):
            name = item.strip().split("::")[0].split(" ")[0]
            if name in known:
                refs.add(name)
    return refs


def graph(base):
    files = {module_of(p, base): p for p in rust_files(base)}
    known = set(files)
    g = {}
    for mod, path in files.items():
        text = strip_comments(open(path, encoding="utf-8").read())
        g[mod] = {r for r in references(text, known) if r != mod and not mod.startswith(r + "::")}
        # a parent module's `pub mod x;` is not a dependency on x
        g[mod] = {r for r in g[mod] if not r.startswith(mod + "::")} if mod else g[mod]
    return g, files


def cycles(g):
    found = []
    color = {}

    def visit(n, stack):
        color[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if color.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif color.get(m) is None:
                visit(m, stack)
        stack.pop()
        color[n] = 2

    for n in sorted(g):
        if color.get(n) is None:
            visit(n, [])
    return found


def layer(mod):
    top = mod.split("::")[0]
    return LAYERS.index(top) if top in LAYERS else None


# the extension
src = os.path.join(ROOT, "src")
g, files = graph(src)
for mod, deps in sorted(g.items()):
    lm = layer(mod)
    if lm is None:
        continue
    for d in sorted(deps):
        ld = layer(d)
        if ld is not None and ld > lm:
            findings.append(f"src: {mod} ({LAYERS[lm]}) uses {d} ({LAYERS[ld]}), a layer above it")
for c in cycles({m: {d for d in ds if d} for m, ds in g.items() if m}):
    findings.append("src: module cycle " + " -> ".join(c))

# the core
core = os.path.join(ROOT, "core", "src")
cg, cfiles = graph(core)
for c in cycles({m: ds for m, ds in cg.items() if m}):
    findings.append("core: module cycle " + " -> ".join(c))
lib = open(os.path.join(core, "lib.rs"), encoding="utf-8").read()
if "#![forbid(unsafe_code)]" not in lib:
    findings.append("core: lib.rs does not forbid unsafe code")
for path in rust_files(core):
    text = open(path, encoding="utf-8").read()
    if re.search(r"\bpgrx\b", strip_comments(text)):
        findings.append(f"core: {os.path.relpath(path, ROOT)} uses pgrx")
cargo = open(os.path.join(ROOT, "core", "Cargo.toml"), encoding="utf-8").read()
if "pgrx" in cargo:
    findings.append("core: Cargo.toml depends on pgrx")

# SQLSTATE literals: five-character codes as byte strings, anywhere but core/src/sqlstate.rs
sqlstate_home = os.path.join(core, "sqlstate.rs")
for base in (src, core):
    for path in rust_files(base):
        if path == sqlstate_home:
            continue
        text = strip_comments(open(path, encoding="utf-8").read())
        for m in re.finditer(r'\*b"([0-9A-Z]{5})"', text):
            findings.append(f"{os.path.relpath(path, ROOT)}: SQLSTATE literal {m.group(1)} outside core/src/sqlstate.rs")

# ... and in the SQL the extension runs (but for scripts frozen with a release): PL/pgSQL names
# PostgreSQL's own conditions (ERRCODE = 'undefined_column'); the extension's own are raised in Rust
for f in sorted(os.listdir(os.path.join(ROOT, "sql"))):
    m = re.match(r"pg_labels--[0-9.]+--([0-9.]+)\.sql$", f)
    released = {re.match(r"pg_labels--([0-9.]+)\.sql$", r).group(1)
                for r in os.listdir(os.path.join(ROOT, "sql", "released")) if r.endswith(".sql")}
    if not f.endswith(".sql") or (m and m.group(1) in released):
        continue
    text = open(os.path.join(ROOT, "sql", f), encoding="utf-8").read()
    for m in re.finditer(r"(ERRCODE\s*=\s*|SQLSTATE\s+|sqlstate\s*(=|IN \(|<>)\s*)'([0-9A-Z]{5})'", text):
        line = text[: m.start()].count("\n") + 1
        findings.append(f"sql/{f}:{line}: SQLSTATE literal {m.group(3)}: name the condition (PostgreSQL's) or raise it from Rust (core/src/sqlstate.rs)")

# every unsafe fn of the extension says what its caller must guarantee, unless it implements a
# trait's method (the trait documents it)
def trait_impl_lines(lines):
    """The indices of lines inside an `impl ... for ...` block (by braces, comments aside)."""
    inside, depth, start = set(), 0, None
    for i, line in enumerate(lines):
        code = line.split("//")[0]
        if start is None and re.match(r"\s*(unsafe )?impl\b.*\bfor\b", code):
            start, depth = i, 0
        if start is not None:
            depth += code.count("{") - code.count("}")
            inside.add(i)
            if depth == 0 and "{" in "".join(lines[start : i + 1]):
                start = None
    return inside


for path in rust_files(src):
    lines = open(path, encoding="utf-8").read().split("\n")
    in_trait_impl = trait_impl_lines(lines)
    for i, line in enumerate(lines):
        if i in in_trait_impl:
            continue
        if re.match(r"\s*(pub(\([a-z]+\))? )?unsafe fn ", line) or re.match(
            r"\s*(pub(\([a-z]+\))? )?unsafe extern", line
        ):
            if "extern" in line and "{" in line and "fn" not in line:
                continue
            j = i - 1
            doc = []
            while j >= 0 and (lines[j].strip().startswith("///") or lines[j].strip().startswith("#[")):
                doc.append(lines[j])
                j -= 1
            if not any("# Safety" in d for d in doc):
                findings.append(f"{os.path.relpath(path, ROOT)}:{i + 1}: unsafe fn without a # Safety section")

# one version everywhere a release names it: Cargo.toml, META.json, the CHANGELOG, and an
# upgrade script from every frozen release to it
import json
cargo_version = re.search(r'^version = "([^"]+)"', open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read(), re.M).group(1)
meta = json.load(open(os.path.join(ROOT, "META.json"), encoding="utf-8"))
for where, v in [("META.json version", meta["version"]), ("META.json provides", meta["provides"]["pg_labels"]["version"])]:
    if v != cargo_version:
        findings.append(f"{where} is {v}, Cargo.toml says {cargo_version}")
if not re.search(r"^## " + re.escape(cargo_version) + r"\b", open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8").read(), re.M):
    findings.append(f"CHANGELOG.md has no section for {cargo_version}")
edges = {}
for f in os.listdir(os.path.join(ROOT, "sql")):
    m = re.match(r"pg_labels--([0-9.]+)--([0-9.]+)\.sql$", f)
    if m:
        edges.setdefault(m.group(1), []).append(m.group(2))
for f in sorted(os.listdir(os.path.join(ROOT, "sql", "released"))):
    m = re.match(r"pg_labels--([0-9.]+)\.sql$", f)
    if not m:
        continue
    seen, todo = set(), [m.group(1)]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo += edges.get(v, [])
    if cargo_version not in seen:
        findings.append(f"no chain of upgrade scripts from the released {m.group(1)} to {cargo_version}")

# No SQL text made from values (README, Security model)
SQL_WORDS = re.compile(
    r"\b(SELECT\b[^\"]*\bFROM\b|INSERT INTO|UPDATE [a-z_.{}\"]+( [a-z]+)? SET|DELETE FROM"
    r"|TRUNCATE (TABLE |ONLY )?(pg_labels\.|[{\"])"
    r"|DROP (TABLE|VIEW|POLICY|FUNCTION|SEQUENCE)|LOCK TABLE|SET (LOCAL |SESSION )?[a-z{\"]"
    r"|ALTER (TABLE|POLICY|EXTENSION|SEQUENCE)|CREATE (TABLE|POLICY|SEQUENCE|INDEX))"
)
for path in rust_files(src):
    rel = os.path.relpath(path, ROOT)
    text = strip_comments(open(path, encoding="utf-8").read())
    for m in re.finditer(r'format!\(\s*"((?:[^"\\]|\\.)*)"', text):
        if SQL_WORDS.search(m.group(1)):
            line = text[: m.start()].count("\n") + 1
            findings.append(f"{rel}:{line}: SQL text made with format!(): build it with pg::sql::Sql, values as parameters")
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"\s*\+\s*&', text):
        if SQL_WORDS.search(m.group(1)):
            line = text[: m.start()].count("\n") + 1
            findings.append(f"{rel}:{line}: SQL text made by concatenation: build it with pg::sql::Sql")
    if not rel.startswith(os.path.join("src", "pg") + os.sep):
        for m in re.finditer(r"\b(SPI_execute\w*|SPI_prepare\w*|SPI_cursor_open\w*|spi_execute\w*)\s*\(", text):
            line = text[: m.start()].count("\n") + 1
            findings.append(f"{rel}:{line}: raw SPI call {m.group(1)} outside src/pg/ (use pg::spi)")
released_targets = {re.match(r"pg_labels--([0-9.]+)\.sql$", f).group(1)
                    for f in os.listdir(os.path.join(ROOT, "sql", "released")) if f.endswith(".sql")}
for f in sorted(os.listdir(os.path.join(ROOT, "sql"))):
    m = re.match(r"pg_labels--[0-9.]+--([0-9.]+)\.sql$", f)
    if not f.endswith(".sql") or (m and m.group(1) in released_targets):
        continue  # an upgrade script of a release is frozen with it
    lines = open(os.path.join(ROOT, "sql", f), encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if "%s" not in line or "-- %s:" in line:
            continue
        if any("-- %s:" in lines[j] for j in range(max(0, i - 3), i)):
            continue
        findings.append(f"sql/{f}:{i + 1}: %s in a dynamic statement without a '-- %s:' note of what it puts there (%I, %L?)")

# One wall (issue 48): PostgreSQL's C API only in src/pg.
pg_dir = os.path.join(src, "pg") + os.sep
for path in rust_files(src):
    if path.startswith(pg_dir):
        continue
    rel = os.path.relpath(path, ROOT)
    raw = open(path, encoding="utf-8").read().split("\n")
    code = strip_comments("\n".join(raw)).split("\n")
    # (strip_comments keeps line breaks of // comments; a /* */ block may shift lines, which
    # the code has none of)
    in_trait_impl = trait_impl_lines(raw)
    for i, line in enumerate(code):
        if re.search(r"\bpg_sys\b", line):
            findings.append(f"{rel}:{i + 1}: pg_sys outside src/pg: reach PostgreSQL through a safe function of crate::pg (names: crate::pg::sys)")
        if rel == os.path.join("src", "lib.rs") and re.match(r'pub extern "C-unwind" fn _PG_init\(\)', line):
            continue  # the library's entry point, called by name, in the crate's root
        if re.search(r"\bextern\s+(\"[^\"]*\"\s*)?(\{|fn\b|crate\b)", line) or re.search(r"\bextern\s*\"", line):
            findings.append(f"{rel}:{i + 1}: extern outside src/pg: PostgreSQL's C API is reached through crate::pg")
        if re.search(r"\bunsafe\b", line):
            if re.match(r"\s*(pub(\([a-z]+\))? )?unsafe fn ", line) and i in in_trait_impl:
                continue  # a trait's method: the trait documents it, its body says why
            near = raw[max(0, i - 3) : i + 1]
            if not any("SAFETY:" in n or "# Safety" in n for n in near):
                findings.append(f"{rel}:{i + 1}: unsafe outside src/pg without a SAFETY: comment naming why")

# Core's tests beside their modules, in files of their own (`#[cfg(test)] mod tests;`), not
# inline in the module they test.
for path in rust_files(core):
    if os.path.basename(path).endswith("tests.rs"):
        continue
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n")):
        if re.match(r"\s*(pub(\([a-z]+\))? )?mod [a-z_]*tests?\s*\{", line):
            findings.append(f"{os.path.relpath(path, ROOT)}:{i + 1}: inline test module: put it in a file of its own beside the module")

# Rooms by concern (issues 34, 48): no Rust file over ROOM_LINES lines, tests aside; no list of
# exceptions.
ROOM_LINES = 500
for base in ("src", os.path.join("core", "src"), os.path.join("client", "src"), os.path.join("verify", "src")):
    for path in rust_files(os.path.join(ROOT, base)):
        rel = os.path.relpath(path, ROOT)
        if os.path.basename(path).endswith("tests.rs") or os.sep + "tests" + os.sep in rel:
            continue
        n = open(path, encoding="utf-8").read().count("\n")
        if n > ROOM_LINES:
            findings.append(f"{rel}: {n} lines, over {ROOM_LINES}: split it by concern")

if findings:
    print("\n".join(findings))
    print(f"structure: {len(findings)} findings")
    sys.exit(1)
print(f"structure: ok ({len(g)} extension modules in {len(LAYERS)} layers, {len(cg)} core modules, no cycles)")
