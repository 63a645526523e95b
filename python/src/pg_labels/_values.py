"""The values ``Scope`` and ``LabelSet``, parsed and printed exactly as the extension does.

This is a transcription of the extension's grammar (``core/src/path.rs``, ``scope.rs``,
``label.rs``, ``labelset.rs`` and the messages of ``error.rs``): the same strings are accepted,
the same canonical text is printed, and the same strings are refused, with the same DETAIL text
and character position as the database's ``22P02`` error.

Internally a scope is its *path*, the segments joined by ``"\\x01"`` (the empty path is the
installation ``*``), and a label is its *entry*, a kind character (``a`` area, ``c`` company,
``i`` installation, ``o`` origin, ``t`` tag) followed by its value in the same path form. Plain
string order on paths and entries is the extension's byte order, so sorting entries gives the
canonical order of a labelset.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Final, NoReturn

__all__ = ["InvalidValue", "LabelSet", "Scope"]

SEP: Final = "\x01"
MAX_SEGMENTS: Final = 16
MAX_SEGMENT_LEN: Final = 63

_SCOPE_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
_ORIGIN_CHARS: Final = _SCOPE_CHARS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ.")
_SCOPE_ALPHABET: Final = 'lower-case a-z, 0-9, "_" and "-"'
_ORIGIN_ALPHABET: Final = 'a-z, A-Z, 0-9, ".", "_" and "-"'
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_SPACE: Final = frozenset(" \t\n\r\x0b\x0c")
ORIGIN_SOURCES: Final = ("slack", "webhook", "event", "tool")

_AREA, _COMPANY, _INSTALLATION, _ORIGIN, _TAG = "a", "c", "i", "o", "t"
_NAMESPACE: Final = {_AREA: "area:", _COMPANY: "company:", _ORIGIN: "origin:", _TAG: "tag:"}


class InvalidValue(ValueError):
    """A ``scope`` or ``labelset`` literal the database would refuse with ``22P02``.

    ``str()`` is the database's message and DETAIL in one line; ``detail`` is the DETAIL alone
    (``Empty segment at character 6.``) and ``position`` the 1-based character position in
    ``text`` it names.
    """

    type_name: str
    text: str
    detail: str
    position: int

    def __init__(self, type_name: str, text: str, detail: str, position: int) -> None:
        self.type_name = type_name
        self.text = text
        self.detail = detail
        self.position = position
        super().__init__(f'invalid input syntax for type {type_name}: "{text}": {detail}')


class _Problem(Exception):
    """A problem found by a parser, before it is given the type name and the text."""

    def __init__(self, detail: str, position: int) -> None:
        super().__init__(detail)
        self.detail = detail
        self.position = position


def _fail(index: int, describe: Callable[[int], str]) -> NoReturn:
    """Raise the problem ``describe(position)`` found at 0-based character ``index``."""
    position = index + 1
    raise _Problem(describe(position), position)


def _fail_at(index: int, detail: str) -> NoReturn:
    """Raise the problem ``detail`` (which names the position) found at ``index``."""
    raise _Problem(detail, index + 1)


def _describe_char(ch: str) -> str:
    if ch == " ":
        return '" " (a space)'
    if unicodedata.category(ch) == "Cc":
        return f"byte 0x{ch.encode('utf-8', 'surrogatepass')[0]:02x}"
    return f'"{ch}"'


def _parse_path(text: str, start: int, end: int, origin: bool, out: list[str]) -> int:
    """Parse ``text[start:end]`` as ``/``-separated segments, appended to ``out``.

    ``origin``: segments after the first use the origin alphabet. Returns the number of
    segments. The checks are made in the extension's order (``core/src/path.rs``).
    """
    if start == end:
        _fail(start, lambda at: f"Empty segment at character {at}.")
    if text[start] == "/":
        _fail(start, lambda at: f'Leading "/" at character {at}.')
    count = 0
    seg_start = i = start
    while True:
        if i == end or text[i] == "/":
            if seg_start == i:
                if i == end:
                    _fail(i - 1, lambda at: f'Trailing "/" at character {at}.')
                _fail(i, lambda at: f"Empty segment at character {at}.")
            count += 1
            if count > MAX_SEGMENTS:
                _fail(
                    seg_start,
                    lambda at: (
                        f"More than {MAX_SEGMENTS} segments; the one past the limit "
                        f"starts at character {at}."
                    ),
                )
            length = i - seg_start
            if length > MAX_SEGMENT_LEN:
                _fail_at(
                    seg_start,
                    f"Segment of {length} characters at character {seg_start + 1} is longer "
                    f"than the limit of {MAX_SEGMENT_LEN}.",
                )
            first = text[seg_start]
            if first not in _ALNUM:
                _fail_at(
                    seg_start,
                    f'Segment starts with "{first}" at character {seg_start + 1}; a segment '
                    "must start with a letter or digit.",
                )
            out.append(text[seg_start:i])
            if i == end:
                return count
            seg_start = i + 1
        else:
            chars, alphabet = (
                (_ORIGIN_CHARS, _ORIGIN_ALPHABET)
                if origin and count > 0
                else (_SCOPE_CHARS, _SCOPE_ALPHABET)
            )
            if text[i] not in chars:
                ch = _describe_char(text[i])
                _fail_at(
                    i, f"Unexpected character {ch} at character {i + 1}; segments use {alphabet}."
                )
        i += 1


def _unknown_namespace(text: str, start: int, end: int) -> NoReturn:
    s = text[start:end]
    colon = s.find(":")
    # The extension cuts the namespace at 40 bytes: every character before a ":" that reaches
    # here passed no alphabet, so count bytes, and keep whole characters as its lossy decoding
    # would (a cut character becomes U+FFFD).
    raw = (s if colon < 0 else s[:colon]).encode("utf-8", "surrogatepass")[:40]
    ns = raw.decode("utf-8", "replace")
    _fail(
        start,
        lambda at: (
            f'Unknown label namespace "{ns}" at character {at}; expected installation, '
            "company:, area:, origin: or tag:."
        ),
    )


def _parse_label(text: str, start: int, end: int) -> str:
    """Parse the label ``text[start:end]`` into its entry (``core/src/label.rs``)."""
    s = text[start:end]
    if not s:
        _fail(start, lambda at: f"Empty label at character {at}.")
    if s == "installation":
        return _INSTALLATION
    colon = s.find(":")

    def installation_value(at: int) -> str:
        return f"The installation label takes no value (character {at})."

    if colon < 0:
        if s.startswith("installation"):
            _fail(start + 12, installation_value)
        _unknown_namespace(text, start, end)
    vs = start + colon + 1
    ns = s[:colon]
    segments: list[str] = []
    if ns == "company":
        n = _parse_path(text, vs, end, False, segments)
        if n != 1:
            _fail(
                vs,
                lambda at: (
                    f"A company label takes exactly one segment, found {n} at character "
                    f"{at}; use area: for a company's areas."
                ),
            )
        kind = _COMPANY
    elif ns == "area":
        n = _parse_path(text, vs, end, False, segments)
        if n < 2:
            _fail(
                vs,
                lambda at: (
                    "An area label takes at least two segments (company/area), found "
                    f"{n} at character {at}; use company: for a company."
                ),
            )
        kind = _AREA
    elif ns == "origin":
        _parse_path(text, vs, end, True, segments)
        source = segments[0]
        if source not in ORIGIN_SOURCES:
            _fail(
                vs,
                lambda at: (
                    f'Unknown origin "{source}" at character {at}; expected slack, '
                    "webhook, event or tool."
                ),
            )
        kind = _ORIGIN
    elif ns == "tag":
        n = _parse_path(text, vs, end, False, segments)
        if n != 1:
            _fail(
                vs,
                lambda at: f"A tag label takes exactly one segment, found {n} at character {at}.",
            )
        kind = _TAG
    elif ns == "installation":
        _fail(start + 12, installation_value)
    else:
        _unknown_namespace(text, start, end)
    return kind + SEP.join(segments)


def _parse_scope(text: str) -> str:
    if text == "*":
        return ""
    if not text:
        _fail(0, lambda at: f'Empty scope at character {at}; the installation is written "*".')
    segments: list[str] = []
    _parse_path(text, 0, len(text), False, segments)
    return SEP.join(segments)


def _parse_labelset(text: str) -> tuple[str, ...]:
    """Parse a labelset literal into its sorted, duplicate-free entries (``labelset.rs``)."""
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in _SPACE:
            i += 1
        return i

    def missing_close() -> NoReturn:
        _fail(n, lambda at: f'Missing "}}" at character {at}.')

    def empty_element(i: int) -> NoReturn:
        _fail(i, lambda at: f"Empty element at character {at}.")

    def bad_quote(i: int) -> NoReturn:
        _fail(i, lambda at: f"Unbalanced or misplaced quote at character {at}.")

    def nested(i: int) -> NoReturn:
        _fail(i, lambda at: f'Unexpected "{{" at character {at}; labelsets do not nest.')

    i = skip(0)
    if i == n or text[i] != "{":
        _fail(i, lambda at: f'A labelset starts with "{{" (character {at}).')
    i = skip(i + 1)
    entries: set[str] = set()
    if i < n and text[i] == "}":
        i += 1
    else:
        while True:
            i = skip(i)
            if i == n:
                missing_close()
            c = text[i]
            if c in ",}":
                empty_element(i)
            if c == "{":
                nested(i)
            if c == '"':
                q = text.find('"', i + 1)
                if q < 0:
                    bad_quote(i)
                start, end = i + 1, q
                if start == end:
                    empty_element(i)
                i = end + 1
            else:
                start = i
                while i < n and text[i] not in ',}{"' and text[i] not in _SPACE:
                    i += 1
                end = i
            entries.add(_parse_label(text, start, end))
            i = skip(i)
            if i == n:
                missing_close()
            c = text[i]
            if c == ",":
                i += 1
            elif c == "}":
                i += 1
                break
            elif c == "{":
                nested(i)
            elif c == '"':
                bad_quote(i)
            else:
                _fail(
                    i,
                    lambda at: f'Expected "," or "}}" at character {at}; labels contain no spaces.',
                )
    i = skip(i)
    if i != n:
        _fail(i, lambda at: f'Junk after "}}" at character {at}.')
    return tuple(sorted(entries))


def _entry_text(entry: str) -> str:
    kind = entry[0]
    if kind == _INSTALLATION:
        return "installation"
    return _NAMESPACE[kind] + entry[1:].replace(SEP, "/")


def _scope_of_entry(entry: str) -> str | None:
    kind = entry[0]
    if kind in (_AREA, _COMPANY):
        return entry[1:]
    if kind == _INSTALLATION:
        return ""
    return None


def _reaches(a: str, b: str) -> bool:
    return a == "" or (b.startswith(a) and (len(b) == len(a) or b[len(a)] == SEP))


def _lca(a: str, b: str) -> str:
    sa, sb = a.split(SEP) if a else [], b.split(SEP) if b else []
    common: list[str] = []
    for x, y in zip(sa, sb, strict=False):
        if x != y:
            break
        common.append(x)
    return SEP.join(common)


def _check_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


class Scope:
    """A position in the containment tree: ``*``, a company (``acme``), an area
    (``acme/platform``) or a sub-area.

    ``Scope("acme/platform")`` parses like the database's ``'acme/platform'::scope`` and raises
    :class:`InvalidValue` (a ``ValueError``) for what the database refuses. Values are immutable
    and hashable; ``str()`` is the canonical text; ``<`` and friends are the database's total
    order (a scope sorts right before its descendants).
    """

    __slots__ = ("_path",)
    _path: str

    def __init__(self, text: str | Scope) -> None:
        if isinstance(text, Scope):
            path = text._path
        else:
            try:
                path = _parse_scope(_check_str(text, "a scope's text"))
            except _Problem as p:
                raise InvalidValue("scope", text, p.detail, p.position) from None
        object.__setattr__(self, "_path", path)

    @classmethod
    def _from_path(cls, path: str) -> Scope:
        s = cls.__new__(cls)
        object.__setattr__(s, "_path", path)
        return s

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Scope is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Scope is immutable")

    def __reduce__(self) -> tuple[type[Scope], tuple[str]]:
        return (Scope, (str(self),))

    def __str__(self) -> str:
        return self._path.replace(SEP, "/") if self._path else "*"

    def __repr__(self) -> str:
        return f"Scope({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Scope):
            return self._path == other._path
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("scope", self._path))

    def __lt__(self, other: Scope) -> bool:
        if not isinstance(other, Scope):
            return NotImplemented
        return self._path < other._path

    def __le__(self, other: Scope) -> bool:
        if not isinstance(other, Scope):
            return NotImplemented
        return self._path <= other._path

    def __gt__(self, other: Scope) -> bool:
        if not isinstance(other, Scope):
            return NotImplemented
        return self._path > other._path

    def __ge__(self, other: Scope) -> bool:
        if not isinstance(other, Scope):
            return NotImplemented
        return self._path >= other._path

    @property
    def depth(self) -> int:
        """Number of segments: 0 for ``*`` (``scope_depth``)."""
        return self._path.count(SEP) + 1 if self._path else 0

    @property
    def parent(self) -> Scope | None:
        """The enclosing scope; ``None`` for ``*`` (``scope_parent``)."""
        if not self._path:
            return None
        cut = self._path.rfind(SEP)
        return Scope._from_path(self._path[:cut] if cut >= 0 else "")

    @property
    def label(self) -> str:
        """The label of this scope's data: ``installation``, ``company:acme`` or
        ``area:acme/platform`` (``scope_label``)."""
        if not self._path:
            return "installation"
        return ("area:" if SEP in self._path else "company:") + str(self)

    def reaches(self, other: Scope) -> bool:
        """``self @> other``: ``self`` is ``other`` or an ancestor of it."""
        if not isinstance(other, Scope):
            raise TypeError(f"reaches() takes a Scope, not {type(other).__name__}")
        return _reaches(self._path, other._path)

    def carries(self, labels: LabelSet) -> bool:
        """``self @> labels``, the barrier rule: this scope reaches the scope of every scope
        label of the set (origin and tag labels never block)."""
        if not isinstance(labels, LabelSet):
            raise TypeError(f"carries() takes a LabelSet, not {type(labels).__name__}")
        return all(
            _reaches(self._path, s) for s in map(_scope_of_entry, labels._entries) if s is not None
        )

    def lca(self, other: Scope) -> Scope:
        """The deepest scope reaching both (``scope_lca``)."""
        if not isinstance(other, Scope):
            raise TypeError(f"lca() takes a Scope, not {type(other).__name__}")
        return Scope._from_path(_lca(self._path, other._path))


class LabelSet:
    """The set of labels a piece of data carries.

    ``LabelSet("{origin:slack, area:acme/platform}")`` parses a literal as the database does
    (any order, duplicates, whitespace, quoted labels); ``LabelSet(["origin:slack", "tag:pii"])``
    takes labels one by one; ``LabelSet()`` is ``{}``. ``str()`` is the canonical text, sorted
    and without spaces. Values are immutable and hashable, iterate over their labels in
    canonical order, and have the set algebra of ``frozenset``: ``|``, ``&``, ``-``, ``^``,
    ``<=`` (subset), ``<``, ``>=``, ``>``, ``in``, ``len``.
    """

    __slots__ = ("_entries",)
    _entries: tuple[str, ...]

    def __init__(self, labels: str | Iterable[str] | LabelSet = ()) -> None:
        if isinstance(labels, LabelSet):
            entries = labels._entries
        elif isinstance(labels, str):
            try:
                entries = _parse_labelset(labels)
            except _Problem as p:
                raise InvalidValue("labelset", labels, p.detail, p.position) from None
        elif isinstance(labels, (bytes, bytearray, memoryview)) or not isinstance(labels, Iterable):
            raise TypeError(
                "a LabelSet is made from a labelset literal (str) or an iterable of labels, "
                f"not {type(labels).__name__}"
            )
        else:
            found: set[str] = set()
            for label in labels:
                found.add(_label_entry(label))
            entries = tuple(sorted(found))
        object.__setattr__(self, "_entries", entries)

    @classmethod
    def _from_entries(cls, entries: Iterable[str]) -> LabelSet:
        s = cls.__new__(cls)
        object.__setattr__(s, "_entries", tuple(sorted(set(entries))))
        return s

    @classmethod
    def of(cls, scope: Scope) -> LabelSet:
        """The set holding a scope's own label (``labelset(scope)``)."""
        if not isinstance(scope, Scope):
            raise TypeError(f"LabelSet.of() takes a Scope, not {type(scope).__name__}")
        return cls([scope.label])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("LabelSet is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("LabelSet is immutable")

    def __reduce__(self) -> tuple[type[LabelSet], tuple[str]]:
        return (LabelSet, (str(self),))

    def __str__(self) -> str:
        return "{" + ",".join(map(_entry_text, self._entries)) + "}"

    def __repr__(self) -> str:
        return f"LabelSet({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LabelSet):
            return self._entries == other._entries
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("labelset", self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __iter__(self) -> Iterator[str]:
        return map(_entry_text, self._entries)

    def __contains__(self, label: object) -> bool:
        """``labels ? label``: a string that is not a label is never held."""
        if not isinstance(label, str):
            return False
        try:
            entry = _parse_label(label, 0, len(label))
        except _Problem:
            return False
        return entry in self._entries

    def _other(self, other: object) -> tuple[str, ...] | None:
        return other._entries if isinstance(other, LabelSet) else None

    def __or__(self, other: LabelSet) -> LabelSet:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return LabelSet._from_entries(self._entries + o)

    def __and__(self, other: LabelSet) -> LabelSet:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return LabelSet._from_entries(set(self._entries) & set(o))

    def __sub__(self, other: LabelSet) -> LabelSet:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return LabelSet._from_entries(set(self._entries) - set(o))

    def __xor__(self, other: LabelSet) -> LabelSet:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return LabelSet._from_entries(set(self._entries) ^ set(o))

    def __le__(self, other: LabelSet) -> bool:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return set(self._entries) <= set(o)

    def __lt__(self, other: LabelSet) -> bool:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return set(self._entries) < set(o)

    def __ge__(self, other: LabelSet) -> bool:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return set(self._entries) >= set(o)

    def __gt__(self, other: LabelSet) -> bool:
        o = self._other(other)
        if o is None:
            return NotImplemented
        return set(self._entries) > set(o)

    def isdisjoint(self, other: LabelSet) -> bool:
        """No label in common (the negation of ``&&``)."""
        o = self._other(other)
        if o is None:
            raise TypeError(f"isdisjoint() takes a LabelSet, not {type(other).__name__}")
        return set(self._entries).isdisjoint(o)

    @property
    def scope(self) -> Scope | None:
        """The deepest scope that can carry the set; ``None`` when it holds no scope label
        (``labelset_scope``)."""
        acc: str | None = None
        for s in map(_scope_of_entry, self._entries):
            if s is not None:
                acc = s if acc is None else _lca(acc, s)
        return None if acc is None else Scope._from_path(acc)

    def escaping(self, scope: Scope) -> LabelSet:
        """The scope labels ``scope`` cannot carry (``labelset_escaping``)."""
        if not isinstance(scope, Scope):
            raise TypeError(f"escaping() takes a Scope, not {type(scope).__name__}")
        return LabelSet._from_entries(
            e
            for e in self._entries
            if (s := _scope_of_entry(e)) is not None and not _reaches(scope._path, s)
        )

    @property
    def origins(self) -> LabelSet:
        """The origin labels (``labelset_origins``)."""
        return LabelSet._from_entries(e for e in self._entries if e[0] == _ORIGIN)

    @property
    def is_trusted(self) -> bool:
        """No origin label: nothing came from an untrusted outside source."""
        return not any(e[0] == _ORIGIN for e in self._entries)


def _label_entry(label: object) -> str:
    text = _check_str(label, "a label")
    try:
        return _parse_label(text, 0, len(text))
    except _Problem as p:
        raise InvalidValue("label", text, p.detail, p.position) from None
