#!/usr/bin/env python3
"""One vocabulary: the rules, their SQLSTATEs and explanations, the step kinds, the decisions
and the effects are defined in the core (core/src: sqlstate.rs, rules.rs, refusal.rs, step.rs),
which prints them (core/examples/vocabulary.rs). Everything else that names them is checked
against that here, with no cluster:

- the Python package's refusal classes (python/src/pg_labels/_errors.py): one per rule, in the
  core's order, with its name, SQLSTATE and explanation word for word; its EFFECTS;
- the console: a colour for every rule and for no other name (svg.py), no copy of an
  explanation (it shows the package's), and only the core's step kinds and decisions where it
  names one;
- sql/schema.sql and docs/reference.md, where they list the step kinds, the decisions and the
  effects;
- every step kind the Python package names in a call.

Exit status 1 with the findings when something does not hold.
"""

import ast
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
findings = []


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def files(rel, suffixes):
    for d, _, names in os.walk(os.path.join(ROOT, rel)):
        for n in sorted(names):
            if n.endswith(suffixes):
                path = os.path.join(d, n)
                yield os.path.relpath(path, ROOT), read(os.path.relpath(path, ROOT))


def same(what, found, expected):
    if found != expected:
        findings.append(f"{what}: {found!r}, where the core says {expected!r}")


def assigned(rel, name):
    """The literal value assigned to the module-level `name` in a Python file under `rel`."""
    for _, text in files(rel, (".py",)):
        for node in ast.parse(text).body:
            assign = isinstance(node, ast.Assign)
            target = node.targets[0] if assign else getattr(node, "target", None)
            if isinstance(target, ast.Name) and target.id == name and node.value is not None:
                try:
                    return ast.literal_eval(node.value)
                except ValueError:
                    continue  # not the literal (a name bound to it, say)
    findings.append(f"{rel}: no {name}")
    return None


def listed(text):
    """The names a sentence lists: `a, b or c`, `` `a`, `b`, `c` ``, `'a', 'b'` (in order)."""
    return [w for w in re.findall(r"[a-z][a-z_]*[a-z]", text) if w not in ("or", "and")]


# ---- the core's vocabulary ----------------------------------------------------------------
out = subprocess.run(
    ["cargo", "run", "-q", "-p", "pg_labels_core", "--example", "vocabulary"],
    cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
).stdout
core = json.loads(out)
RULES = [r["name"] for r in core["rules"]]
KINDS = core["step_kinds"]
DECISIONS = core["decisions"]
EFFECTS = core["effects"]

# ---- the Python package -------------------------------------------------------------------
sys.path.insert(0, os.path.join(ROOT, "python", "src"))
from pg_labels import _errors  # noqa: E402  (after the path; needs no driver)

classes = _errors.Refusal.BY_RULE
same("python: Refusal.BY_RULE's rules", list(classes), RULES)
for r in core["rules"]:
    cls = classes.get(r["name"])
    if cls is None:
        continue
    same(f"python: {cls.__name__}.RULE", cls.RULE, r["name"])
    same(f"python: {cls.__name__}.SQLSTATE", cls.SQLSTATE, r["sqlstate"])
    same(f"python: {cls.__name__}.EXPLANATION", cls.EXPLANATION, r["explanation"])
    if cls.__doc__ is None or f"``{r['name']}`` (``{r['sqlstate']}``)" not in cls.__doc__:
        findings.append(f"python: {cls.__name__}'s docstring does not name {r['name']}")
same("python: the SQLSTATEs refusal_from knows", sorted(_errors._BY_SQLSTATE),
     sorted(r["sqlstate"] for r in core["rules"]))
effects = assigned("python/src/pg_labels", "EFFECTS") or ()
same("python: EFFECTS", list(effects), EFFECTS)
for rel, text in files("python/src/pg_labels", (".py",)):
    for kind in re.findall(r"_step\(\s*['\"]([a-z_]+)['\"]", text):
        if kind not in KINDS:
            findings.append(f"{rel}: a step of kind {kind!r}, which is no step kind of the core")

# ---- the console --------------------------------------------------------------------------
colours = assigned("console/src/pg_labels_console", "RULE_COLOURS") or {}
same("console: svg.py's RULE_COLOURS (the rules it colours)", sorted(colours), sorted(RULES))
for rel, text in files("console/src/pg_labels_console", (".py", ".html")):
    flat = " ".join(text.split())
    for r in core["rules"]:
        if r["explanation"][:60] in flat:
            findings.append(f"{rel}: a copy of {r['name']}'s explanation (use the package's)")
    # a step's kind (st.kind, st["kind"], steps d and q in SQL; a refusal's kind is another list)
    step_kind = r"(?:\bst\.kind|\b[dq]\.kind|\[\"kind\"\])\s*(?:==|=|!=)\s*[\"']([a-z_]+)[\"']"
    for kind in re.findall(step_kind, text):
        if kind not in KINDS:
            findings.append(f"{rel}: step kind {kind!r}, which is no step kind of the core")
    for decision in re.findall(r"decision\s*(?:==|=|!=)\s*[\"']([a-z_]+)[\"']", text):
        if decision not in DECISIONS:
            findings.append(f"{rel}: decision {decision!r}, which is no decision of the core")

# ---- SQL and the reference ----------------------------------------------------------------
schema = read("sql/schema.sql")
m = re.search(r"pg_labels\.is_step_kind\(text\) IS\s*'A kind of step: ([^(]*)\(", schema)
same("sql/schema.sql: is_step_kind's comment", listed(m.group(1)) if m else None, KINDS)
m = re.search(r"COMMENT ON COLUMN pg_labels\.steps\.kind IS\s*'([^']*)'", schema)
same("sql/schema.sql: steps.kind's comment", listed(m.group(1)) if m else None, KINDS)
m = re.search(r"ON FUNCTION pg_labels\.is_step_decision\(text\) IS\s*'A decision a step holds: "
              r"([^(]*)\(a judged call\), ([^(]*)\(", schema)
same("sql/schema.sql: is_step_decision's comment", listed(m.group(1) + m.group(2)) if m else None,
     DECISIONS)
m = re.search(r"CONSTRAINT tools_effect_check CHECK \(effect IN \(([^)]*)\)\)", schema)
same("sql/schema.sql: tools_effect_check", listed(m.group(1)) if m else None, EFFECTS)
reference = read("docs/reference.md")
m = re.search(r"`kind` is one of ((?:`[a-z_]+`(?:, )?)+)", reference)
same("docs/reference.md: the step kinds", listed(m.group(1)) if m else None, KINDS)
m = re.search(r"`decision` one of ((?:`[a-z_]+`(?:, )?)+)", reference)
same("docs/reference.md: the decisions", listed(m.group(1)) if m else None, DECISIONS)

if findings:
    print("vocabulary: what differs from the core's (cargo run -p pg_labels_core --example "
          "vocabulary)")
    for f in findings:
        print("  " + f)
    sys.exit(1)
print(f"vocabulary: {len(RULES)} rules, {len(KINDS)} step kinds, {len(DECISIONS)} decisions and "
      f"{len(EFFECTS)} effects as the core defines them")
