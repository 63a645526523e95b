"""The package's exceptions, and refusals read from a driver's error.

A refusal of pg_labels is an error the extension raised about its own tables: one of the rules
(SQLSTATEs ``23L01`` to ``23L05``, a class each) or one of its checks (a constraint of schema
``pg_labels``: a step of the wrong shape, a run that does not exist, ...). The exceptions here
deliberately do not derive from any driver's ``IntegrityError``: code that catches
``IntegrityError`` as "duplicate row" must not swallow a data barrier.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ._values import InvalidValue, LabelSet

__all__ = [
    "ApprovalRequired",
    "DataBarrier",
    "ExtensionMissing",
    "PgLabelsError",
    "Refusal",
    "Sealed",
    "UnknownTool",
    "UntrustedToIrreversible",
    "refusal_from",
]

#: The schema of the platform tables (fixed by the extension).
PLATFORM_SCHEMA = "pg_labels"


class PgLabelsError(Exception):
    """Base class of the package's errors other than ``ValueError``/``TypeError``."""


class ExtensionMissing(PgLabelsError):
    """The database the connection is on has no ``CREATE EXTENSION pg_labels``."""


class Refusal(PgLabelsError):
    """A write pg_labels refused, with the fields of its error.

    ``rule`` is the rule's name (``data_barrier``, ...) or ``None`` for a check that is not a
    rule; ``constraint`` the error's constraint-name field; ``run_id`` and ``tool`` are read
    from the message and DETAIL where they name them; ``escaping`` holds the labels the DETAIL
    names as escaping the scope (``data_barrier``), ``origins`` the untrusted origins it names
    (``untrusted_to_irreversible``, ``approval_required``). A DETAIL lists at most 20 labels,
    so for very large sets these are the first 20 of them.
    """

    rule: str | None
    sqlstate: str
    message: str
    constraint: str | None
    detail: str | None
    hint: str | None
    table: str | None
    run_id: uuid.UUID | None
    tool: str | None
    escaping: LabelSet
    origins: LabelSet

    #: The SQLSTATE of the class's rule (``None`` for the base class).
    SQLSTATE: ClassVar[str | None] = None
    #: The name of the class's rule.
    RULE: ClassVar[str | None] = None
    #: What the rule means and what to do: the HINT the database gives a tool call the rule
    #: refuses (for ``sealed``, a change to the trail). The core's text, word for word
    #: (tests/structure/vocabulary.py checks it); the console shows it.
    EXPLANATION: ClassVar[str | None] = None
    #: The class of each rule, by the rule's name, in the order the rules are checked.
    BY_RULE: ClassVar[Mapping[str, type[Refusal]]]

    def __init__(
        self,
        message: str,
        *,
        sqlstate: str,
        rule: str | None = None,
        constraint: str | None = None,
        detail: str | None = None,
        hint: str | None = None,
        table: str | None = None,
        run_id: uuid.UUID | None = None,
        tool: str | None = None,
        escaping: LabelSet | None = None,
        origins: LabelSet | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.rule = rule
        self.constraint = constraint
        self.detail = detail
        self.hint = hint
        self.table = table
        self.run_id = run_id
        self.tool = tool
        self.escaping = escaping if escaping is not None else LabelSet()
        self.origins = origins if origins is not None else LabelSet()

    def __str__(self) -> str:
        # Like the driver's own text: the message, then DETAIL and HINT lines.
        lines = [self.message]
        if self.detail:
            lines.append(f"DETAIL:  {self.detail}")
        if self.hint:
            lines.append(f"HINT:  {self.hint}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, sqlstate={self.sqlstate!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields: rebuilt through _rebuild so a refusal survives pickling
        # (multiprocessing, task queues).
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls: type[Refusal], message: str, state: dict[str, Any]) -> Refusal:
    refusal = cls.__new__(cls)
    Exception.__init__(refusal, message)
    refusal.__dict__.update(state)
    return refusal


class DataBarrier(Refusal):
    """``data_barrier`` (``23L01``): the run's (share's, read's) scope cannot carry the labels."""

    SQLSTATE = "23L01"
    RULE = "data_barrier"
    EXPLANATION = (
        "This is not a policy to edit and not a missing approval: the data flow crossed a "
        "boundary the platform is not authorized to cross. Check that the agent was published in "
        "the right company and area; check that the channel's conversation points at the same "
        "area as the agent; check the event binding before assuming the listener is wrong. Do "
        "not try to fix it by widening the query: the label has already travelled."
    )


class UntrustedToIrreversible(Refusal):
    """``untrusted_to_irreversible`` (``23L02``): untrusted data would reach a destructive or
    financial tool."""

    SQLSTATE = "23L02"
    RULE = "untrusted_to_irreversible"
    EXPLANATION = (
        "Untrusted data (Slack, webhooks, events, tool results) must never reach a destructive or "
        "financial tool, approved or not. Run such a step where no untrusted input has entered "
        "the run."
    )


class ApprovalRequired(Refusal):
    """``approval_required`` (``23L03``): a reversible write on untrusted data without an
    unused granted approval."""

    SQLSTATE = "23L03"
    RULE = "approval_required"
    EXPLANATION = (
        "Record the request with pg_labels.request_approval(run, tool, args) and have a person "
        "the DBA allows grant it with pg_labels.decide_approval(request, true): one approval lets "
        "exactly one identical call through."
    )


class UnknownTool(Refusal):
    """``unknown_tool`` (``23L04``): a tool absent from ``pg_labels.tools``."""

    SQLSTATE = "23L04"
    RULE = "unknown_tool"
    EXPLANATION = (
        "Add the tool to pg_labels.tools with its effect (read, reversible_write, destructive or "
        "financial) before calling it: tools absent from the catalog are refused."
    )


class Sealed(Refusal):
    """``sealed`` (``23L05``): a change to the append-only trail or a sealed run."""

    SQLSTATE = "23L05"
    RULE = "sealed"
    EXPLANATION = (
        "The trail is append-only and a run's scope is sealed when it is opened. Retention goes "
        "through pg_labels.purge(older_than), which the DBA grants."
    )


_RULE_CLASSES = (DataBarrier, UntrustedToIrreversible, ApprovalRequired, UnknownTool, Sealed)
Refusal.BY_RULE = MappingProxyType({c.RULE: c for c in _RULE_CLASSES if c.RULE is not None})
_BY_SQLSTATE: dict[str, type[Refusal]] = {
    c.SQLSTATE: c for c in _RULE_CLASSES if c.SQLSTATE is not None
}
_RULES = frozenset(Refusal.BY_RULE)

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_RUN = re.compile(rf"\b[Rr]un ({_UUID})\b")
# "carries {...}, which scope X cannot carry" (a call, a share, a read); "was opened with
# {...}, which scope X cannot carry" (a run not opened).
_ESCAPING = re.compile(r"(?:carries|opened with) (\{.*?\}), which scope \S+ cannot carry")
# "carries {...}; no approval makes ..." / "carries {...}; no unused granted approval ..."
_ORIGINS = re.compile(r"carries (\{.*?\}); no ")
_TOOL_PATTERNS = (
    re.compile(r"; tool (.+?) was not called\.$"),
    re.compile(r"^untrusted_to_irreversible: \S+ tool (.+?) refused on untrusted data$"),
    re.compile(r"^approval_required: reversible write (.+?) on untrusted data"),
    re.compile(r"^unknown_tool: tool (.+?) is not in the tool catalog$"),
)
_MORE = re.compile(r",\.\.\. and \d+ more\}$")


def _labels(text: str) -> LabelSet:
    """The labels of a DETAIL's list (``{a,b,... and 3 more}`` gives ``{a,b}``)."""
    try:
        return LabelSet(_MORE.sub("}", text))
    except InvalidValue:
        return LabelSet()


def _field(error: object, *names: str) -> str | None:
    for name in names:
        value = getattr(error, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _driver_error(error: BaseException) -> BaseException | None:
    """The psycopg or asyncpg error in ``error`` (SQLAlchemy wraps them)."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 8:
        seen += 1
        if hasattr(current, "diag") or hasattr(current, "constraint_name"):
            return current
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return None


def refusal_from(error: BaseException) -> Refusal | None:
    """The :class:`Refusal` a driver's error stands for, or ``None``.

    Takes a psycopg 3 or asyncpg error (or SQLAlchemy's wrapper of one). Returns ``None`` for
    anything that is not a refusal of pg_labels, including PostgreSQL's own errors about other
    tables and serialization failures (``40001``, which a caller should retry). A refusal
    returned here is meant to be raised with ``raise refusal from error``.
    """
    if isinstance(error, Refusal):
        return error
    err = _driver_error(error)
    if err is None:
        return None
    diag = getattr(err, "diag", None)
    source: object = diag if diag is not None else err
    sqlstate = getattr(err, "sqlstate", None)
    if not isinstance(sqlstate, str):
        return None
    message = _field(source, "message_primary", "message") or str(err)
    detail = _field(source, "message_detail", "detail")
    hint = _field(source, "message_hint", "hint")
    constraint = _field(source, "constraint_name")
    schema = _field(source, "schema_name")
    table = _field(source, "table_name")

    cls = _BY_SQLSTATE.get(sqlstate)
    if cls is None:
        # The extension's own checks, and PostgreSQL's constraints of its tables, name schema
        # pg_labels; a transaction to retry (class 40) is left to the driver's class.
        if schema != PLATFORM_SCHEMA or sqlstate.startswith("40"):
            return None
        cls = Refusal
    rule = cls.RULE
    if rule is None:
        if constraint in _RULES:
            rule = constraint
        else:
            head = message.split(":", 1)[0]
            rule = head if head in _RULES else None

    run_id: uuid.UUID | None = None
    for text in (message, detail or ""):
        m = _RUN.search(text)
        if m:
            run_id = uuid.UUID(m.group(1))
            break
    tool: str | None = None
    for pattern in _TOOL_PATTERNS:
        m = pattern.search(detail or "") or pattern.search(message)
        if m:
            tool = m.group(1)
            break
    escaping = LabelSet()
    origins = LabelSet()
    if detail:
        m = _ESCAPING.search(detail)
        if m:
            escaping = _labels(m.group(1))
        m = _ORIGINS.search(detail)
        if m:
            origins = _labels(m.group(1))
    return cls(
        message,
        sqlstate=sqlstate,
        rule=rule,
        constraint=constraint,
        detail=detail,
        hint=hint,
        table=table,
        run_id=run_id,
        tool=tool,
        escaping=escaping,
        origins=origins,
    )
