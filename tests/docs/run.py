#!/usr/bin/env python3
"""Run every SQL and shell block of README.md and docs/, and every demo/*.sql file, against a
real cluster.

The pages: README.md first, then the docs/*.md files in the order README.md's map (its section
"## Documentation") links them; a docs/*.md file the map does not list fails the test. Their
blocks are extracted (never copied into the repository) and run in that order in one fresh
database named `mydb`, so a page may build on the pages before it (the README's roles and
tool catalog, runs and psql variables set with `\\gset`): each page continues the one before,
as the map says. The demo files run as the superuser in a second fresh database, as
scripts/demo.sh runs them. The output (psql -a, errors inline) is compared with
tests/docs/expected.out after replacing what changes from run to run (uuids, temp schemas).
Any difference fails the test.

Every fenced block has a language, and the last non-blank line before a block says who runs it:

    <!-- as ROLE -->                 before ```sql: run after `\\c - ROLE`. A ```sql block
                                     without it fails the test.
    <!-- run as root -->             before ```sh, README.md only: the install steps, which
                                     scripts/test.sh runs (`run.py ROOT --install`), verbatim,
                                     with bash from the repository's root: the suite tests the
                                     build the README's install steps make.
    <!-- run as postgres -->         before ```sh: run by this script in its place among the SQL
                                     blocks (a psql `\\!`), with `bash -euo pipefail` in a scratch
                                     directory, as the postgres OS user (runuser, when this
                                     script runs as root), with the test cluster's PGHOST and
                                     PGPORT, PGUSER=postgres and the cluster's binaries first on
                                     PATH. It may name `mydb` (the database the blocks before it
                                     filled) and `newdb` (a database it makes and drops). Its
                                     stderr and exit status are compared, after the block's
                                     text; its stdout is not (pg_restore and psql print what
                                     they restore).
    <!-- run by tests/NAME/run.sh --> before ```sh: that suite runs the block itself; the file
                                     must exist and name this page's path.
    <!-- not run: REASON -->         before ```sh: not run (the README's two commands, a binary
                                     package); the reason is required.

Any other ```sh block fails the test; blocks in other languages (rust, text, json) are not
run. Also checked, before anything runs: no .md file of the repository (outside third_party/
and target/) contains a sentence known to be stale (STALE); every relative link of README.md
and docs/ names a file that exists and, for a page, a heading it has; no page has two
headings with the same anchor.

    tests/docs/run.py ROOT [--accept]   (PGHOST, PGPORT, PGUSER and PSQL from the environment)
    tests/docs/run.py ROOT --install    (the README's install steps, as root)
"""
import difflib
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile

ANNOTATION = re.compile(r"^<!-- as ([a-z_][a-z0-9_]*) -->$")
RUN_AS_ROOT = "<!-- run as root -->"
RUN_AS_POSTGRES = "<!-- run as postgres -->"
RUN_BY = re.compile(r"^<!-- run by (tests/[a-z0-9_]+/run\.sh) -->$")
NOT_RUN = re.compile(r"^<!-- not run: (.*\S.*) -->$")
CREATE_ROLE = re.compile(r"\bCREATE ROLE ([a-z_][a-z0-9_]*)", re.IGNORECASE)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MAP_HEADING = "## Documentation"
# sentences that were true once and must not come back
STALE = ["not yet written by the extension", "not yet used by the extension"]
DATABASE = "mydb"


class DocError(Exception):
    pass


def blocks(root, rel):
    """Every fenced block of a page: (line, language, annotation, text)."""
    lines = open(os.path.join(root, rel), encoding="utf-8").read().split("\n")
    found = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            lang = stripped[3:].strip()
            if not lang:
                raise DocError(f"{rel}:{i + 1}: a block without a language")
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            note = lines[j].strip() if j >= 0 else ""
            body = []
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise DocError(f"{rel}:{start}: a block that is never closed")
            found.append((start, lang, note, "\n".join(body)))
        i += 1
    return found


def classify(root, rel, line, lang, note):
    """What runs a block: ('sql', role), ('root',), ('postgres',), ('suite', path), ('not run',)
    or ('other',); raise naming a block whose annotation is missing or wrong."""
    where = f"{rel}:{line}"
    if lang == "sql":
        m = ANNOTATION.match(note)
        if not m:
            raise DocError(
                f"{where}: an SQL block without <!-- as ROLE --> before it: "
                "every block is run by the tests, as the role it names"
            )
        return ("sql", m.group(1))
    if lang != "sh":
        return ("other",)
    if note == RUN_AS_ROOT:
        if rel != "README.md":
            raise DocError(f"{where}: <!-- run as root --> is for the README's install steps only")
        return ("root",)
    if note == RUN_AS_POSTGRES:
        return ("postgres",)
    m = RUN_BY.match(note)
    if m:
        suite = os.path.join(root, m.group(1))
        if not os.path.isfile(suite):
            raise DocError(f"{where}: {m.group(1)} does not exist")
        if rel not in open(suite, encoding="utf-8").read():
            raise DocError(f"{where}: {m.group(1)} does not name {rel}, so it cannot run this block")
        return ("suite", m.group(1))
    if NOT_RUN.match(note):
        return ("not run",)
    raise DocError(
        f"{where}: a shell block without <!-- run as root -->, <!-- run as postgres -->, "
        "<!-- run by tests/NAME/run.sh --> or <!-- not run: REASON --> before it"
    )


def pages(root):
    """README.md, then docs/*.md in the order of the README's map."""
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read().split("\n")
    try:
        start = readme.index(MAP_HEADING)
    except ValueError:
        raise DocError(f"README.md has no map of docs/ (a section {MAP_HEADING!r})")
    listed = []
    for line in readme[start + 1 :]:
        if line.startswith("## "):
            break
        for target in LINK.findall(line):
            if target.startswith("docs/") and target.endswith(".md") and target not in listed:
                listed.append(target)
    docs_dir = os.path.join(root, "docs")
    present = sorted(
        f"docs/{f}" for f in (os.listdir(docs_dir) if os.path.isdir(docs_dir) else []) if f.endswith(".md")
    )
    for f in present:
        if f not in listed:
            raise DocError(f"{f} is not in README.md's map ({MAP_HEADING}): list it there")
    for f in listed:
        if f not in present:
            raise DocError(f"README.md's map lists {f}, which does not exist")
    return ["README.md"] + listed


def anchors(root, rel):
    """The anchors of a page's headings (GitHub's: lower case, punctuation dropped, spaces to
    hyphens), or raise naming a heading whose anchor another heading of the page has."""
    seen = {}
    fence = False
    for n, line in enumerate(open(os.path.join(root, rel), encoding="utf-8").read().split("\n"), 1):
        if line.strip().startswith("```"):
            fence = not fence
            continue
        m = re.match(r"^#{1,6} (.*)$", line)
        if fence or not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        if slug in seen:
            raise DocError(f"{rel}:{n}: heading {m.group(1)!r} again (line {seen[slug]}): one heading per anchor")
        seen[slug] = n
    return seen


def check_links(root, rels):
    for rel in rels:
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
            if not os.path.exists(os.path.join(root, dest)):
                raise DocError(f"{rel}: a link to {target}: {dest} does not exist")
            if anchor and dest.endswith(".md") and anchor not in anchors(root, dest):
                raise DocError(f"{rel}: a link to {target}: {dest} has no heading with anchor #{anchor}")


def check_stale(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "target", "third_party", "node_modules")]
        for f in filenames:
            if f.endswith(".md"):
                path = os.path.join(dirpath, f)
                text = open(path, encoding="utf-8", errors="replace").read().lower()
                for s in STALE:
                    if s in text:
                        raise DocError(f"{os.path.relpath(path, root)} says {s!r}, which is no longer true")


def shell_command(scratch, n):
    """The psql line that runs scratch/block_n.sh as the postgres OS user, stderr and exit
    status to scratch/block_n.err."""
    psql = os.environ.get("PSQL", "psql")
    path = "/usr/local/bin:/usr/bin:/bin"
    if os.sep in psql:
        path = os.path.dirname(os.path.abspath(psql)) + ":" + path
    env = [f"PATH={path}", "PGUSER=postgres", "PGDATABASE=postgres"]
    for v in ("PGHOST", "PGPORT"):
        if os.environ.get(v):
            env.append(f"{v}={os.environ[v]}")
    runuser = "runuser -u postgres -- " if os.geteuid() == 0 else ""
    return (
        f"\\! cd {scratch} && {runuser}env {' '.join(env)} bash -euo pipefail block_{n}.sh "
        f">/dev/null 2>block_{n}.err; echo \"(exit $?)\" >>block_{n}.err"
    )


def script(root, scratch):
    """The psql script, the roles it creates, and the shell blocks: [(psql line, text, err file)]."""
    rels = pages(root)
    check_links(root, rels)
    for rel in rels:
        anchors(root, rel)
    check_stale(root)
    demo_dir = os.path.join(root, "demo")
    demos = sorted(f for f in os.listdir(demo_dir) if f.endswith(".sql"))
    roles = []
    shells = []
    out = [
        "-- generated by tests/docs/run.py from README.md, docs/ and demo/: do not edit",
        f"DROP DATABASE IF EXISTS {DATABASE};",
        "DROP DATABASE IF EXISTS newdb;",
        "DROP DATABASE IF EXISTS pg_labels_docs_demo;",
        f"CREATE DATABASE {DATABASE};",
        "CREATE DATABASE pg_labels_docs_demo;",
        f"\\c {DATABASE} postgres",
    ]
    for rel in rels:
        n = 0
        for line, lang, note, text in blocks(root, rel):
            kind = classify(root, rel, line, lang, note)
            if kind[0] == "sql":
                n += 1
                roles += [r for r in CREATE_ROLE.findall(text) if r not in roles]
                out.append(f"-- {rel}, block {n}, as {kind[1]}")
                out.append(f"\\c - {kind[1]}")
                out.append(text)
            elif kind[0] == "postgres":
                n += 1
                k = len(shells) + 1
                with open(os.path.join(scratch, f"block_{k}.sh"), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
                command = shell_command(scratch, k)
                out.append(f"-- {rel}, block {n}, run as postgres (sh)")
                out.append(command)
                shells.append((command, text, os.path.join(scratch, f"block_{k}.err")))
    out.append("\\c pg_labels_docs_demo postgres")
    out.append("CREATE EXTENSION pg_labels;")
    for f in demos:
        text = open(os.path.join(demo_dir, f), encoding="utf-8").read()
        roles += [r for r in CREATE_ROLE.findall(text) if r not in roles]
        out.append(f"-- demo/{f}, as postgres (scripts/demo.sh)")
        out.append("\\c - postgres")
        out.append(text)
    out.append("\\c postgres postgres")
    out.append(f"DROP DATABASE {DATABASE};")
    out.append("DROP DATABASE IF EXISTS newdb;")
    out.append("DROP DATABASE pg_labels_docs_demo;")
    if roles:
        out.append("DROP ROLE " + ", ".join(roles) + ";")
    return "\n".join(out) + "\n", shells


def normalize(text):
    text = UUID.sub("<uuid>", text)
    text = re.sub(r"pg_temp_\d+", "pg_temp", text)
    # lineage_dot labels a run with the first 8 digits of its id
    text = re.sub(r"\\n[0-9a-f]{8}\"", r'\\n<id8>"', text)
    return text


def install(root):
    found = [(line, text) for line, lang, note, text in blocks(root, "README.md") if lang == "sh" and note == RUN_AS_ROOT]
    if not found:
        print("docs: README.md has no install block (<!-- run as root --> before ```sh)")
        return 1
    for line, text in found:
        print(f"docs: README.md:{line}: the install steps, as written", flush=True)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=root, check=False)
        if done.returncode != 0:
            print(f"docs: FAILED (README.md:{line}: the install steps exited {done.returncode})")
            return 1
    return 0


def main():
    root = sys.argv[1]
    accept = "--accept" in sys.argv[2:]
    if "--install" in sys.argv[2:]:
        return install(root)
    scratch = tempfile.mkdtemp(prefix="pg_labels_docs.")
    try:
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(scratch, pw.pw_uid, pw.pw_gid)
        try:
            sql, shells = script(root, scratch)
        except DocError as e:
            print(f"docs: FAILED ({e})")
            return 1
        psql = os.environ.get("PSQL", "psql")
        run = subprocess.run(
            [psql, "-X", "-a", "-q", "-d", "postgres", "-f", "-"],
            input=sql.encode(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        got = run.stdout.decode("utf-8", "replace")
        # each shell block: its text, then what it wrote to stderr and its exit status
        for command, text, err in shells:
            result = open(err, encoding="utf-8", errors="replace").read() if os.path.exists(err) else "(not run)\n"
            got = got.replace(command + "\n", text + "\n" + result, 1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    got = normalize(got)
    got = got.replace("psql:<stdin>:", "psql:")
    got = re.sub(r"^psql:\d+: ", "", got, flags=re.M)
    expected_path = os.path.join(root, "tests", "docs", "expected.out")
    if accept:
        open(expected_path, "w", encoding="utf-8").write(got)
        print(f"docs: wrote {expected_path}")
        return 0
    expected = open(expected_path, encoding="utf-8").read() if os.path.exists(expected_path) else ""
    if got == expected:
        print("docs: ok (every block of README.md and docs/, and every demo file, ran as documented)")
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            expected.splitlines(True), got.splitlines(True), "expected.out", "actual"
        )
    )
    print("docs: FAILED (the output differs from tests/docs/expected.out)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
