"""Property tests: the package parses, prints and decides exactly as the server does.

Generated strings (valid and malformed) go to the server; its text, or its 22P02 message and
DETAIL, must be what Scope and LabelSet give. Generated values are compared for the barrier
rule (scope @> labelset) and the set algebra."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pg_labels import InvalidValue, LabelSet, Scope

from conftest import connect

SETTINGS = settings(
    max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

segment = st.text("abcz09_-", min_size=1, max_size=5).filter(lambda s: s[0].isalnum())
valid_scope = st.one_of(
    st.just("*"),
    st.lists(segment, min_size=1, max_size=4).map("/".join),
)
noise = st.text('abAZ09_-./:* é\t{}",\\\x01', max_size=24)
long_scope = st.one_of(
    st.integers(60, 66).map(lambda n: "a" * n),
    st.integers(14, 18).map(lambda n: "/".join(["a"] * n)),
)
scope_text = st.one_of(valid_scope, noise, long_scope, st.tuples(valid_scope, noise).map("".join))

origin_sub = st.text("aZ9._-", min_size=1, max_size=4).filter(lambda s: s[0].isalnum())
valid_label = st.one_of(
    st.just("installation"),
    segment.map(lambda s: f"company:{s}"),
    st.lists(segment, min_size=2, max_size=3).map(lambda p: "area:" + "/".join(p)),
    st.tuples(
        st.sampled_from(["slack", "webhook", "event", "tool"]), st.lists(origin_sub, max_size=2)
    ).map(lambda t: "origin:" + "/".join([t[0], *t[1]])),
    segment.map(lambda s: f"tag:{s}"),
)
prefix = st.sampled_from(["company:", "area:", "origin:", "tag:", "installation", "x:", ""])
bad_label = st.one_of(
    st.tuples(prefix, noise).map("".join),
    # the right alphabet, the wrong number of segments or an unknown source
    st.tuples(prefix, st.lists(st.one_of(segment, st.just("email")), max_size=3).map("/".join)).map(
        "".join
    ),
)
label_text = st.one_of(valid_label, bad_label)
space = st.sampled_from(["", "", " ", "\t", "  "])


@st.composite
def labelset_text(draw: st.DrawFn) -> str:
    labels = draw(st.lists(st.one_of(valid_label, label_text), max_size=5))
    parts = []
    for label in labels:
        quoted = draw(st.booleans()) and draw(st.booleans())
        parts.append(draw(space) + (f'"{label}"' if quoted else label) + draw(space))
    text = draw(space) + "{" + ",".join(parts) + "}" + draw(space)
    for _ in range(draw(st.integers(0, 2))):
        # a stray brace, comma, quote or space somewhere, or some noise
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.one_of(st.sampled_from('{},"  '), noise)) + text[at:]
    return text


valid_labelset = st.lists(valid_label, max_size=6).map(LabelSet)


@pytest.fixture(scope="module")
def conn() -> Iterator[psycopg.Connection]:
    with connect(autocommit=True) as c:
        yield c


def server(conn: psycopg.Connection, type_name: str, text: str) -> tuple[str | None, str | None]:
    """The server's canonical text, or its DETAIL when it refuses with 22P02."""
    try:
        row = conn.execute(f"SELECT (%t::{type_name})::text", [text]).fetchone()
    except psycopg.errors.InvalidTextRepresentation as e:
        assert e.diag.message_primary == f'invalid input syntax for type {type_name}: "{text}"'
        return None, e.diag.message_detail
    assert row is not None
    return row[0], None


def client(cls: type[Scope] | type[LabelSet], text: str) -> tuple[str | None, str | None]:
    try:
        return str(cls(text)), None
    except InvalidValue as e:
        assert f"character {e.position}" in e.detail
        return None, e.detail


@SETTINGS
@given(scope_text)
def test_scope_parse_and_print(conn: psycopg.Connection, text: str) -> None:
    assert client(Scope, text) == server(conn, "scope", text)


@SETTINGS
@given(st.one_of(labelset_text(), noise))
def test_labelset_parse_and_print(conn: psycopg.Connection, text: str) -> None:
    assert client(LabelSet, text) == server(conn, "labelset", text)


@SETTINGS
@given(valid_scope, valid_labelset)
def test_barrier_rule(conn: psycopg.Connection, scope: str, labels: LabelSet) -> None:
    row = conn.execute(
        "SELECT %t::scope @> %t::labelset, labelset_escaping(%t::labelset, %t::scope)::text, "
        "labelset_scope(%t::labelset)::text, labelset_origins(%t::labelset)::text",
        [scope, str(labels), str(labels), scope, str(labels), str(labels)],
    ).fetchone()
    s = Scope(scope)
    sc = labels.scope
    assert row == (
        s.carries(labels),
        str(labels.escaping(s)),
        None if sc is None else str(sc),
        str(labels.origins),
    )


@SETTINGS
@given(valid_labelset, valid_labelset)
def test_set_algebra(conn: psycopg.Connection, a: LabelSet, b: LabelSet) -> None:
    row = conn.execute(
        "SELECT (%t::labelset || %t::labelset)::text, %t::labelset @> %t::labelset, "
        "%t::labelset && %t::labelset, %t::labelset = %t::labelset",
        [str(a), str(b)] * 4,
    ).fetchone()
    assert row == (str(a | b), a >= b, not a.isdisjoint(b), a == b)
    assert a & b <= a and (a - b).isdisjoint(b)


@SETTINGS
@given(valid_scope, valid_scope)
def test_scope_order_and_containment(conn: psycopg.Connection, a: str, b: str) -> None:
    row = conn.execute(
        "SELECT %t::scope @> %t::scope, %t::scope < %t::scope, "
        "scope_lca(%t::scope, %t::scope)::text",
        [a, b] * 3,
    ).fetchone()
    sa, sb = Scope(a), Scope(b)
    assert row == (sa.reaches(sb), sa < sb, str(sa.lca(sb)))


# One literal per problem the parsers report (core/src/error.rs), and some that are fine.
SCOPES = [
    "*",
    "acme",
    "acme/platform/infra",
    "a-b_c/0",
    "",
    "/acme",
    "acme/",
    "acme//x",
    "Acme",
    "acme x",
    "_x",
    "-x",
    "a" * 63,
    "a" * 64,
    "/".join(["a"] * 16),
    "/".join(["a"] * 17),
    "aé/",
    "é",
    "a\tb",
    "**",
    "*/a",
    "a\x7fb",
    "a\u0085b",
]
LABELSETS = [
    "{}",
    " { } ",
    "{installation}",
    '{"origin:slack", tag:a}',
    "{origin:slack/T01/C02.x-y_z}",
    "",
    "  ",
    "origin:slack",
    "{origin:slack",
    "{tag:a,,tag:b}",
    "{tag:a,}",
    "{,tag:a}",
    "{tag:a}}",
    "{{tag:a}}",
    "{tag:a tag:b}",
    '{"tag:a}',
    '{tag:a"x"}',
    '{""}',
    "{secret:x}",
    "{tag:a, area:acme}",
    "{origin: slack}",
    "{origin:email}",
    "{company:acme/x}",
    "{installation:x}",
    "{installationx}",
    "{tag:a/b}",
    "{tag:}",
    "{company:}",
    "{area:a//b}",
    "{origin:slack/_x}",
    "{origin:slack/a b}",
    "{origin:Slack}",
    "{x" + "y" * 50 + ":z}",
    "{é:x}",
    "{tag:a}x",
    "{tag:a",
    "{tag:a,",
    "{ tag:a ,tag:b }",
    "{" + ",".join(["tag:x"] * 3) + "}",
]


@pytest.mark.parametrize("text", SCOPES)
def test_listed_scopes(conn: psycopg.Connection, text: str) -> None:
    assert client(Scope, text) == server(conn, "scope", text)


@pytest.mark.parametrize("text", LABELSETS)
def test_listed_labelsets(conn: psycopg.Connection, text: str) -> None:
    assert client(LabelSet, text) == server(conn, "labelset", text)
