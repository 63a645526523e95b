"""Scope and LabelSet without a server: grammar, canonical text, algebra, immutability."""

from __future__ import annotations

import pickle

import pytest

from pg_labels import InvalidValue, LabelSet, Scope

ALPHABET = 'lower-case a-z, 0-9, "_" and "-".'


def test_scope_text_and_functions() -> None:
    assert str(Scope("*")) == "*"
    s = Scope("acme/platform/infra")
    assert str(s) == "acme/platform/infra"
    assert s.depth == 3
    assert s.parent == Scope("acme/platform")
    assert Scope("acme").parent == Scope("*")
    assert Scope("*").parent is None
    assert Scope("*").label == "installation"
    assert Scope("acme").label == "company:acme"
    assert Scope("acme/platform").label == "area:acme/platform"
    assert Scope("acme/x").lca(Scope("acme/xy")) == Scope("acme")
    assert Scope("acme").lca(Scope("acme2")) == Scope("*")


def test_scope_reaches() -> None:
    assert Scope("acme").reaches(Scope("acme/platform"))
    assert Scope("*").reaches(Scope("globex"))
    assert not Scope("acme/finance").reaches(Scope("acme/platform"))
    assert not Scope("acme/plat").reaches(Scope("acme/platform"))
    assert not Scope("acme/platform").reaches(Scope("acme"))


def test_scope_order_keeps_subtrees_contiguous() -> None:
    names = ["acme-x", "acme/platform", "acme", "acme/a-b", "acme0", "*"]
    assert [str(s) for s in sorted(map(Scope, names))] == [
        "*",
        "acme",
        "acme/a-b",
        "acme/platform",
        "acme-x",
        "acme0",
    ]


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("", 'Empty scope at character 1; the installation is written "*".'),
        ("/acme", 'Leading "/" at character 1.'),
        ("acme/", 'Trailing "/" at character 5.'),
        ("acme//x", "Empty segment at character 6."),
        (
            "Acme",
            'Unexpected character "A" at character 1; segments use ' + ALPHABET,
        ),
        (
            "acme x",
            'Unexpected character " " (a space) at character 5; segments use ' + ALPHABET,
        ),
        (
            "_x",
            'Segment starts with "_" at character 1; a segment must start with a letter or digit.',
        ),
        ("a" * 64, "Segment of 64 characters at character 1 is longer than the limit of 63."),
        (
            "/".join(["a"] * 17),
            "More than 16 segments; the one past the limit starts at character 33.",
        ),
        (
            "aé/",
            'Unexpected character "é" at character 2; segments use ' + ALPHABET,
        ),
    ],
)
def test_scope_errors(text: str, detail: str) -> None:
    with pytest.raises(InvalidValue) as e:
        Scope(text)
    assert e.value.detail == detail
    assert isinstance(e.value, ValueError)
    assert str(e.value) == f'invalid input syntax for type scope: "{text}": {detail}'


def test_labelset_canonical_text() -> None:
    assert str(LabelSet()) == "{}"
    assert str(LabelSet(" { } ")) == "{}"
    assert (
        str(LabelSet("{ tag:pii , origin:slack,area:acme/platform, tag:pii }"))
        == "{area:acme/platform,origin:slack,tag:pii}"
    )
    assert str(LabelSet('{"origin:slack"}')) == "{origin:slack}"
    assert (
        str(LabelSet(["tag:x", "installation", "company:acme"]))
        == "{company:acme,installation,tag:x}"
    )
    # namespace first, then segment by segment
    assert list(LabelSet("{area:acme-x/a,area:acme/platform/infra,area:acme/platform}")) == [
        "area:acme/platform",
        "area:acme/platform/infra",
        "area:acme-x/a",
    ]


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("", 1),
        ("origin:slack", 1),
        ("{origin:slack", 14),
        ("{tag:a,,tag:b}", 8),
        ("{tag:a,}", 8),
        ("{,tag:a}", 2),
        ("{tag:a}}", 8),
        ("{{tag:a}}", 2),
        ("{tag:a tag:b}", 8),
        ('{"tag:a}', 2),
        ("{secret:x}", 2),
        ("{tag:a, area:acme}", 14),
        ("{origin: slack}", 9),
        ("{origin:email}", 9),
        ("{company:acme/x}", 10),
        ("{installation:x}", 14),
        ("{tag:a/b}", 6),
    ],
)
def test_labelset_errors(text: str, position: int) -> None:
    with pytest.raises(InvalidValue) as e:
        LabelSet(text)
    assert e.value.position == position
    assert f"character {position}" in e.value.detail


def test_labelset_algebra() -> None:
    a = LabelSet("{area:acme/platform,origin:slack}")
    b = LabelSet("{origin:slack}")
    assert b <= a and b < a and a >= b and not a <= b
    assert a | LabelSet("{tag:x}") == LabelSet("{area:acme/platform,origin:slack,tag:x}")
    assert a & b == b
    assert a - b == LabelSet("{area:acme/platform}")
    assert "origin:slack" in a and "origin:tool" not in a and "not a label" not in a
    assert 42 not in a
    assert len(a) == 2 and bool(a) and not LabelSet()
    assert a.origins == b and not a.is_trusted and LabelSet("{tag:x}").is_trusted
    assert not a.isdisjoint(b)


def test_barrier_rule() -> None:
    s = LabelSet("{area:acme/platform,company:acme,origin:slack}")
    assert Scope("acme").carries(s)
    assert Scope("*").carries(s)
    assert not Scope("acme/platform").carries(s)
    assert s.scope == Scope("acme")
    assert s.escaping(Scope("acme/platform")) == LabelSet("{company:acme}")
    i = LabelSet("{installation,company:acme}")
    assert not Scope("acme").carries(i) and Scope("*").carries(i)
    assert i.scope == Scope("*")
    assert LabelSet("{tag:x}").scope is None
    assert Scope("globex").carries(LabelSet("{origin:slack}"))
    assert LabelSet.of(Scope("acme")) == LabelSet("{company:acme}")


def test_immutable_hashable_picklable() -> None:
    s, ls = Scope("acme"), LabelSet("{tag:a}")
    with pytest.raises(AttributeError):
        s._path = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ls.foo = 1  # type: ignore[attr-defined]
    assert {Scope("acme"), s} == {s}
    assert {LabelSet("{tag:a, tag:a}"), ls} == {ls}
    assert pickle.loads(pickle.dumps(s)) == s and pickle.loads(pickle.dumps(ls)) == ls
    assert Scope(s) == s and LabelSet(ls) == ls
    assert repr(s) == "Scope('acme')" and repr(ls) == "LabelSet('{tag:a}')"


def test_wrong_types() -> None:
    with pytest.raises(TypeError):
        Scope(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LabelSet(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LabelSet(b"{}")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LabelSet([1])  # type: ignore[list-item]
    with pytest.raises(InvalidValue):
        LabelSet(["tag:a", "nope"])
    with pytest.raises(TypeError):
        Scope("acme").carries("{tag:a}")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LabelSet() | "{tag:a}"  # type: ignore[operator]
    assert Scope("acme") != "acme"
