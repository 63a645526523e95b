"""The platform's calls: runs, steps, the gate, approvals, sharing and the tool catalog.

Each call is one statement, or one transaction for the two statements of a share (and for
the tool catalog), written with parameters only. The caller's transaction is respected: on a
connection that is not in autocommit mode nothing is committed, and each call runs in a
savepoint, so a refused call rolls back itself and leaves the caller's transaction usable. In
autocommit mode (and on asyncpg outside a transaction block) each call is its own transaction.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from ._errors import refusal_from
from ._psycopg import register, register_async
from ._values import LabelSet, Scope

__all__ = [
    "EFFECTS",
    "AsyncPlatform",
    "AsyncRun",
    "Decision",
    "Platform",
    "Run",
    "Shared",
    "Step",
    "Tool",
]

#: The effects a tool may have (``pg_labels.tools.effect``).
EFFECTS: Final = ("read", "reversible_write", "destructive", "financial")

_SAVEPOINT: Final = sql.SQL("SAVEPOINT pg_labels_call")
_RELEASE: Final = sql.SQL("RELEASE SAVEPOINT pg_labels_call")
_ROLLBACK: Final = sql.SQL("ROLLBACK TO SAVEPOINT pg_labels_call")


@dataclass(frozen=True)
class Decision:
    """What the gate decided: ``decision`` is ``allow``, ``ask`` or ``block``; ``rule`` the
    rule that asked or blocked; ``step_id`` the ``gate_decided`` step it recorded."""

    decision: str
    rule: str | None
    reason: str | None
    step_id: int

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


@dataclass(frozen=True)
class Step:
    """A step as the database recorded it (``labels`` are the step's own, completed by the
    database: a ``tool_result`` of an untrusted tool carries ``origin:tool``, a
    ``context_read`` the artifact's labels)."""

    id: int
    run_id: uuid.UUID
    kind: str
    tool: str | None
    labels: LabelSet
    decision: str | None
    request_id: int | None


@dataclass(frozen=True)
class Shared:
    """An artifact recorded by a run and the share that offers it."""

    artifact_id: uuid.UUID
    share_id: int
    digest: str
    labels: LabelSet
    to_scope: Scope


@dataclass(frozen=True)
class Tool:
    """An entry of the tool catalog, as :meth:`Platform.sync_tools` wrote it."""

    name: str
    effect: str
    trusted_output: bool


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


def _scope(value: object, what: str = "scope") -> Scope:
    if isinstance(value, Scope):
        return value
    if isinstance(value, str):
        return Scope(value)
    raise TypeError(f"{what} must be a Scope or str, not {type(value).__name__}")


def _labels(value: object) -> LabelSet:
    if value is None:
        return LabelSet()
    if isinstance(value, LabelSet):
        return value
    if isinstance(value, str):
        return LabelSet(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return LabelSet(value)
    raise TypeError(
        "labels must be a LabelSet, a labelset literal or a list of labels, "
        f"not {type(value).__name__}"
    )


def _uuid(value: object, what: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, (Run, AsyncRun)):
        return value.id
    if isinstance(value, str):
        return uuid.UUID(value)
    raise TypeError(f"{what} must be a UUID or str, not {type(value).__name__}")


def _name(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value


def _opt_name(value: object, what: str) -> str | None:
    return None if value is None else _name(value, what)


def _args(value: object) -> Jsonb | None:
    if value is None:
        return None
    try:
        json.dumps(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"args must be JSON-serializable: {err}") from None
    return Jsonb(value)


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__}")
    return value


def _digest(content: object) -> str:
    if isinstance(content, str):
        data = content.encode()
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
    return hashlib.sha256(data).hexdigest()


def _insert(table: str, columns: Sequence[str], returning: str) -> sql.Composed:
    """``INSERT INTO pg_labels.<table> (<columns>) VALUES (%s, ...) RETURNING <returning>``:
    the names are the package's own, every value a parameter."""
    return sql.SQL("INSERT INTO {} ({}) VALUES ({}) RETURNING {}").format(
        sql.Identifier("pg_labels", table),
        sql.SQL(", ").join(map(sql.Identifier, columns)),
        sql.SQL(", ").join(sql.Placeholder() * len(columns)),
        sql.SQL(returning),
    )


_STEP_RETURNING: Final = "id, run_id, kind, tool, labels, decision, request_id"


def _returned(row: Sequence[Any] | None) -> Sequence[Any]:
    """The row a statement with RETURNING (or a function call) gave: there is always one."""
    if row is None:
        raise psycopg.InterfaceError("the statement returned no row")
    return row


def _step(row: Sequence[Any]) -> Step:
    return Step(
        id=row[0],
        run_id=row[1],
        kind=row[2],
        tool=row[3],
        labels=row[4],
        decision=row[5],
        request_id=row[6],
    )


def _step_statement(
    run: uuid.UUID, kind: str, **columns: object
) -> tuple[sql.Composed, list[object]]:
    names = ["run_id", "kind"]
    values: list[object] = [run, kind]
    for name, value in columns.items():
        if value is not None:
            names.append(name)
            values.append(value)
    return _insert("steps", names, _STEP_RETURNING), values


def _open_statement(
    agent: object, scope: object, labels: object, run_id: object, listener: object
) -> tuple[sql.Composed, list[object]]:
    names: list[str] = []
    values: list[object] = []
    for name, value in (
        ("id", None if run_id is None else _uuid(run_id, "run_id")),
        ("agent", _opt_name(agent, "agent")),
        ("scope", None if scope is None else _scope(scope)),
        ("labels", None if labels is None else _labels(labels)),
        ("listener_id", None if listener is None else _listener(listener)),
    ):
        if value is not None:
            names.append(name)
            values.append(value)
    return _insert("runs", names, "id, agent, scope, labels"), values


def _listener(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"listener must be an int (a listener's id), not {type(value).__name__}")
    return value


_GATE: Final = sql.SQL("SELECT decision, rule, reason, step_id FROM pg_labels.gate(%s, %s, %s, %s)")
_REQUEST: Final = sql.SQL("SELECT pg_labels.request_approval(%s, %s, %s, %s, %s)")
_DECIDE: Final = sql.SQL("SELECT pg_labels.decide_approval(%s, %s, %s)")
_CARRIED: Final = sql.SQL("SELECT labels FROM pg_labels.runs WHERE id = %s")
_APPROVAL: Final = sql.SQL(
    "SELECT decision FROM pg_labels.steps "
    "WHERE run_id = %s AND kind = 'approval_decided' AND request_id = %s"
)
_RUN: Final = sql.SQL("SELECT id, agent, scope, labels FROM pg_labels.runs WHERE id = %s")
_SHARE_COLUMNS: Final = "id, to_scope"
_TOOLS_UPSERT: Final = sql.SQL(
    "INSERT INTO pg_labels.tools (name, effect, trusted_output, description) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE "
    "SET effect = EXCLUDED.effect, trusted_output = EXCLUDED.trusted_output, "
    "description = EXCLUDED.description "
    "WHERE (tools.effect, tools.trusted_output, tools.description) IS DISTINCT FROM "
    "(EXCLUDED.effect, EXCLUDED.trusted_output, EXCLUDED.description)"
)


def _annotation(annotations: object, key: str, attribute: str) -> object:
    """The value of an MCP tool annotation (``None`` when it is not set): ``key`` as the
    protocol spells it (``readOnlyHint``), or ``attribute`` as the Python SDK's models name
    it (``read_only_hint``, in mcp 2)."""
    if annotations is None:
        return None
    if isinstance(annotations, Mapping):
        value = annotations.get(key)
        return annotations.get(attribute) if value is None else value
    value = getattr(annotations, key, None)
    return getattr(annotations, attribute, None) if value is None else value


def _effect_of(annotations: object) -> str:
    """MCP's hints as an effect: ``readOnlyHint: true`` is ``read``; otherwise a tool is
    destructive unless ``destructiveHint`` is explicitly false (MCP's default for it is
    true), then ``reversible_write``."""
    if _annotation(annotations, "readOnlyHint", "read_only_hint") is True:
        return "read"
    if _annotation(annotations, "destructiveHint", "destructive_hint") is False:
        return "reversible_write"
    return "destructive"


def _describe_tool(tool: object) -> tuple[str, object, str | None]:
    """``(name, annotations, description)`` of an MCP tool description (a dict or an object
    with ``name``, ``annotations`` and ``description``)."""
    if isinstance(tool, Mapping):
        name, annotations, description = (
            tool.get("name"),
            tool.get("annotations"),
            tool.get("description"),
        )
    else:
        name = getattr(tool, "name", None)
        annotations = getattr(tool, "annotations", None)
        description = getattr(tool, "description", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"an MCP tool needs a str name, got {name!r}")
    if description is not None and not isinstance(description, str):
        description = None
    return name, annotations, description


def tools_from_mcp(
    tools: Iterable[object],
    *,
    effects: Mapping[str, str] | None = None,
    trusted: Iterable[str] | Mapping[str, bool] | None = None,
) -> list[Tool]:
    """The catalog entries for MCP tool descriptions, without a database; the mapping of
    :meth:`Platform.sync_tools`."""
    return [t for t, _ in _catalog(tools, effects=effects, trusted=trusted)]


def _catalog(
    tools: Iterable[object],
    *,
    effects: Mapping[str, str] | None = None,
    trusted: Iterable[str] | Mapping[str, bool] | None = None,
) -> list[tuple[Tool, str | None]]:
    """The catalog entries and the descriptions of MCP tool descriptions."""
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise TypeError("tools must be a list of MCP tool descriptions")
    effects = dict(effects or {})
    if isinstance(trusted, Mapping):
        trusted_names = {n for n, t in trusted.items() if _bool(t, f"trusted[{n!r}]")}
        named = set(trusted)
    elif trusted is None:
        trusted_names, named = set(), set()
    elif isinstance(trusted, str):
        raise TypeError("trusted must be a list of tool names or a mapping, not a str")
    else:
        trusted_names = {_name(n, "a trusted tool's name") for n in trusted}
        named = set(trusted_names)
    out: list[tuple[Tool, str | None]] = []
    seen: set[str] = set()
    for tool in tools:
        name, annotations, description = _describe_tool(tool)
        if name in seen:
            raise ValueError(f"tool {name} is listed twice")
        seen.add(name)
        effect = effects.get(name)
        if effect is None:
            effect = _effect_of(annotations)
        elif effect not in EFFECTS:
            raise ValueError(
                f"effect of tool {name} must be one of {', '.join(EFFECTS)}: {effect!r}"
            )
        out.append((Tool(name, effect, name in trusted_names), description))
    unknown = (set(effects) | named) - seen
    if unknown:
        raise ValueError(
            f"effects or trusted name tools not in the list: {', '.join(sorted(unknown))}"
        )
    return out


# ---------------------------------------------------------------------------------------------
# psycopg, synchronous
# ---------------------------------------------------------------------------------------------


@contextmanager
def _translate() -> Iterator[None]:
    """Raise a pg_labels refusal as its :class:`Refusal` (``from`` the driver's error)."""
    try:
        yield
    except psycopg.Error as err:
        refusal = refusal_from(err)
        if refusal is not None:
            raise refusal from err
        raise


@contextmanager
def _atomic(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """One call: a transaction in autocommit mode, else a savepoint in the caller's
    transaction (begun as psycopg begins it, never committed here)."""
    if conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        with conn.transaction():
            yield
        return
    conn.execute(_SAVEPOINT)
    try:
        yield
    except BaseException:
        # Undo this call only; should that fail too (a broken connection), the first error
        # is the one that explains it.
        with suppress(psycopg.Error):
            conn.execute(_ROLLBACK)
            conn.execute(_RELEASE)
        raise
    conn.execute(_RELEASE)


class Platform:
    """The platform's calls on a psycopg 3 connection (registers the types on it).

    Raises :class:`ExtensionMissing` when the database has no pg_labels.
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        if not isinstance(conn, psycopg.Connection):
            raise TypeError(
                f"Platform takes a psycopg Connection, not {type(conn).__name__} "
                "(AsyncPlatform takes an AsyncConnection)"
            )
        register(conn)
        self.conn = conn

    def _one(self, query: sql.Composed | sql.SQL, params: Sequence[object]) -> Sequence[Any]:
        with _translate(), _atomic(self.conn), self.conn.cursor() as cur:
            cur.execute(query, params)
            row: Sequence[Any] | None = cur.fetchone()
        row = _returned(row)
        return row

    def open_run(
        self,
        agent: str | None,
        scope: Scope | str | None,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        run_id: uuid.UUID | str | None = None,
        listener: int | None = None,
    ) -> Run:
        """Open a run: ``INSERT INTO pg_labels.runs``. ``scope`` may be ``None`` for a run of a
        listener, whose scope it takes. Raises :class:`DataBarrier` when the labels or the
        listener's scope escape the scope (the run is not opened)."""
        query, params = _open_statement(agent, scope, labels, run_id, listener)
        row = self._one(query, params)
        return Run(self, row[0], row[1], row[2], row[3])

    def run(self, run_id: uuid.UUID | str) -> Run:
        """A handle on an existing run; ``LookupError`` when there is none."""
        rid = _uuid(run_id, "run_id")
        with _translate(), self.conn.cursor() as cur:
            cur.execute(_RUN, [rid])
            row = cur.fetchone()
        if row is None:
            raise LookupError(f"run {rid} does not exist")
        return Run(self, row[0], row[1], row[2], row[3])

    def decide_approval(self, request: int, granted: bool, reason: str | None = None) -> int:
        """``pg_labels.decide_approval``: for the connection of a person the DBA allowed to
        decide (not the platform's writer). Returns the ``approval_decided`` step's id."""
        if isinstance(request, bool) or not isinstance(request, int):
            raise TypeError(f"request must be an int, not {type(request).__name__}")
        row = self._one(_DECIDE, [request, _bool(granted, "granted"), _opt_name(reason, "reason")])
        return int(row[0])

    def sync_tools(
        self,
        tools: Iterable[object],
        *,
        effects: Mapping[str, str] | None = None,
        trusted: Iterable[str] | Mapping[str, bool] | None = None,
    ) -> list[Tool]:
        """Fill ``pg_labels.tools`` from MCP tool descriptions, in one transaction.

        Each tool is a dict or an object with ``name`` and ``annotations`` (and optionally
        ``description``; MCP's own ``Tool`` models too). Its effect is ``read`` when
        ``readOnlyHint`` is true, else ``reversible_write`` when ``destructiveHint`` is
        explicitly false, else ``destructive`` (MCP's default for ``destructiveHint`` is
        true); ``effects`` names the effect of tools whose annotations cannot say it
        (``financial``) and overrides them. A tool's output is untrusted unless ``trusted``
        names it. Tools already in the catalog are updated when they differ; others are left
        as they are. Writing the catalog is the DBA's: run this on such a connection.
        """
        entries = _catalog(tools, effects=effects, trusted=trusted)
        with _translate(), _atomic(self.conn), self.conn.cursor() as cur:
            cur.executemany(
                _TOOLS_UPSERT,
                [[t.name, t.effect, t.trusted_output, d] for t, d in entries],
            )
        return [t for t, _ in entries]


class Run:
    """An open run and the steps a platform writes for it."""

    def __init__(
        self,
        platform: Platform,
        run_id: uuid.UUID,
        agent: str | None,
        scope: Scope,
        labels: LabelSet,
    ) -> None:
        self.platform = platform
        self.id = run_id
        self.agent = agent
        self.scope = scope
        self.opened_labels = labels

    def __repr__(self) -> str:
        return f"<Run {self.id} {self.agent} in {self.scope}>"

    def _step(self, kind: str, **columns: object) -> Step:
        query, params = _step_statement(self.id, kind, **columns)
        return _step(self.platform._one(query, params))

    def input(
        self,
        labels: LabelSet | str | Iterable[str],
        args: object = None,
        *,
        reason: str | None = None,
    ) -> Step:
        """Record data entering the run (an ``input`` step with its labels)."""
        return self._step(
            "input", labels=_labels(labels), args=_args(args), reason=_opt_name(reason, "reason")
        )

    def gate(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> Decision:
        """Ask the gate (``pg_labels.gate``): recorded as a ``gate_decided`` step, never
        raising for a decision."""
        row = self.platform._one(
            _GATE, [self.id, _name(tool, "tool"), _args(args), _labels(labels)]
        )
        return Decision(row[0], row[1], row[2], row[3])

    def call(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> Step:
        """Record a ``tool_called`` step, or raise the :class:`Refusal` the database raised
        (:class:`DataBarrier`, :class:`UntrustedToIrreversible`, :class:`ApprovalRequired`,
        :class:`UnknownTool`)."""
        return self._step(
            "tool_called", tool=_name(tool, "tool"), args=_args(args), labels=_labels(labels)
        )

    def result(
        self,
        tool: str,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        args: object = None,
    ) -> Step:
        """Record a tool's result (``tool_result``); its labels gain ``origin:tool`` when the
        tool's output is untrusted."""
        return self._step(
            "tool_result", tool=_name(tool, "tool"), labels=_labels(labels), args=_args(args)
        )

    def request_approval(
        self,
        tool: str,
        args: object = None,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        reason: str | None = None,
    ) -> int:
        """``pg_labels.request_approval``: returns the request's step id, which a person
        decides with ``decide_approval``."""
        row = self.platform._one(
            _REQUEST,
            [
                self.id,
                _name(tool, "tool"),
                _args(args),
                _labels(labels),
                _opt_name(reason, "reason"),
            ],
        )
        return int(row[0])

    def share(
        self,
        content: str | bytes,
        *,
        to_scope: Scope | str | None = None,
        to_run: Run | uuid.UUID | str | None = None,
        labels: LabelSet | str | Iterable[str] | None = None,
        description: str | None = None,
    ) -> Shared:
        """Record an artifact of this run (its SHA-256 digest; at least the run's labels) and
        share it with a scope or one run, in one transaction. Raises :class:`DataBarrier` when
        the target cannot carry the artifact's labels and no crossing covers them."""
        _, _, artifact, share = _share_statements(
            self.id, content, to_scope, to_run, labels, description
        )
        with _translate(), _atomic(self.platform.conn), self.platform.conn.cursor() as cur:
            cur.execute(*artifact)
            arow = cur.fetchone()
            arow = _returned(arow)
            cur.execute(share[0], [arow[0], *share[1]])
            srow = cur.fetchone()
            srow = _returned(srow)
        return Shared(arow[0], srow[0], arow[1], arow[2], srow[1])

    def read_context(self, artifact_id: uuid.UUID | str) -> Step:
        """Record a ``context_read`` of a shared artifact; the run then carries its labels.
        Raises :class:`DataBarrier` when no share offers it to this run."""
        return self._step("context_read", artifact_id=_uuid(artifact_id, "artifact_id"))

    def approval(self, request: int) -> str | None:
        """The decision of one of this run's approval requests: ``granted``, ``denied``, or
        ``None`` while it waits (read from the ``approval_decided`` step)."""
        if isinstance(request, bool) or not isinstance(request, int):
            raise TypeError(f"request must be an int, not {type(request).__name__}")
        with _translate(), self.platform.conn.cursor() as cur:
            cur.execute(_APPROVAL, [self.id, request])
            row = cur.fetchone()
        return None if row is None else str(row[0])

    def carried(self) -> LabelSet:
        """What the run carries now (``runs.labels``)."""
        with _translate(), self.platform.conn.cursor() as cur:
            cur.execute(_CARRIED, [self.id])
            row = cur.fetchone()
        if row is None:
            raise LookupError(f"run {self.id} does not exist")
        labels: LabelSet = row[0]
        return labels


def _share_statements(
    run: uuid.UUID,
    content: object,
    to_scope: object,
    to_run: object,
    labels: object,
    description: object,
) -> tuple[
    Scope | None,
    uuid.UUID | None,
    tuple[sql.Composed, list[object]],
    tuple[sql.Composed, list[object]],
]:
    if to_scope is None and to_run is None:
        raise TypeError("share() needs to_scope or to_run")
    scope = None if to_scope is None else _scope(to_scope, "to_scope")
    target = None if to_run is None else _uuid(to_run, "to_run")
    names = ["origin_run", "digest"]
    values: list[object] = [run, _digest(content)]
    if labels is not None:
        names.append("labels")
        values.append(_labels(labels))
    if description is not None:
        names.append("description")
        values.append(_name(description, "description"))
    artifact = (_insert("artifacts", names, "id, digest, labels"), values)
    snames = ["artifact_id"]
    svalues: list[object] = []
    for name, value in (("to_scope", scope), ("to_run", target)):
        if value is not None:
            snames.append(name)
            svalues.append(value)
    share = (_insert("shares", snames, _SHARE_COLUMNS), svalues)
    return scope, target, artifact, share


# ---------------------------------------------------------------------------------------------
# Asynchronous: psycopg's AsyncConnection or asyncpg
# ---------------------------------------------------------------------------------------------


@asynccontextmanager
async def _atranslate() -> AsyncIterator[None]:
    """Raise a pg_labels refusal as its :class:`Refusal`, for either driver."""
    try:
        yield
    except Exception as err:
        refusal = refusal_from(err)
        if refusal is not None:
            raise refusal from err
        raise


@asynccontextmanager
async def _aatomic(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[None]:
    if conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        async with conn.transaction():
            yield
        return
    await conn.execute(_SAVEPOINT)
    try:
        yield
    except BaseException:
        # Undo this call only; should that fail too (a broken connection), the first error
        # is the one that explains it.
        with suppress(psycopg.Error):
            await conn.execute(_ROLLBACK)
            await conn.execute(_RELEASE)
        raise
    await conn.execute(_RELEASE)


class _PsycopgAsync:
    """Statements on a psycopg ``AsyncConnection``."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn
        self.registered = False

    async def ready(self) -> None:
        if not self.registered:
            await register_async(self.conn)
            self.registered = True

    def atomic(self) -> AbstractAsyncContextManager[None]:
        return _aatomic(self.conn)

    async def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        async with self.conn.cursor() as cur:
            await cur.execute(query, params)
            row: Sequence[Any] | None = await cur.fetchone()
        return row

    async def executemany(
        self, query: sql.Composed | sql.SQL, rows: Sequence[Sequence[object]]
    ) -> None:
        async with self.conn.cursor() as cur:
            await cur.executemany(query, rows)


class _Asyncpg:
    """Statements on an asyncpg connection: the same SQL with ``$n`` placeholders, ``args``
    sent as JSON text cast to ``jsonb`` (whatever jsonb codec the connection has), the types
    registered with :func:`pg_labels.asyncpg.register`. asyncpg has no implicit transaction:
    its ``transaction()`` is the call's own transaction, or a savepoint in the caller's."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.registered = False

    async def ready(self) -> None:
        if not self.registered:
            from .asyncpg import register as register_asyncpg

            await register_asyncpg(self.conn)
            self.registered = True

    def atomic(self) -> AbstractAsyncContextManager[None]:
        transaction: AbstractAsyncContextManager[None] = self.conn.transaction()
        return transaction

    @staticmethod
    def _render(
        query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> tuple[str, list[object]]:
        parts = query.as_string(None).split("%s")
        if len(parts) != len(params) + 1:
            raise AssertionError("placeholders and parameters differ")
        text = [parts[0]]
        values: list[object] = []
        for n, (value, rest) in enumerate(zip(params, parts[1:], strict=True), start=1):
            if isinstance(value, Jsonb):
                text.append(f"(${n}::text)::jsonb")
                values.append(json.dumps(value.obj))
            else:
                text.append(f"${n}")
                values.append(value)
            text.append(rest)
        return "".join(text), values

    async def fetchone(
        self, query: sql.Composed | sql.SQL, params: Sequence[object]
    ) -> Sequence[Any] | None:
        text, values = self._render(query, params)
        row: Sequence[Any] | None = await self.conn.fetchrow(text, *values)
        return row

    async def executemany(
        self, query: sql.Composed | sql.SQL, rows: Sequence[Sequence[object]]
    ) -> None:
        if not rows:
            return
        text, _ = self._render(query, rows[0])
        await self.conn.executemany(text, [self._render(query, r)[1] for r in rows])


def _executor(conn: object) -> _PsycopgAsync | _Asyncpg:
    if isinstance(conn, psycopg.AsyncConnection):
        return _PsycopgAsync(conn)
    try:
        import asyncpg
    except ImportError:
        asyncpg = None
    if asyncpg is not None and isinstance(
        conn, (asyncpg.Connection, asyncpg.pool.PoolConnectionProxy)
    ):
        return _Asyncpg(conn)
    raise TypeError(
        "AsyncPlatform takes a psycopg AsyncConnection or an asyncpg connection, "
        f"not {type(conn).__name__} (Platform takes a psycopg Connection)"
    )


class AsyncPlatform:
    """:class:`Platform` for a psycopg 3 ``AsyncConnection`` or an asyncpg connection: the
    same calls, awaited. The types are registered on the connection by the first call."""

    def __init__(self, conn: psycopg.AsyncConnection[Any] | Any) -> None:
        self._exec = _executor(conn)
        self.conn = conn

    async def _ready(self) -> None:
        await self._exec.ready()

    async def _one(self, query: sql.Composed | sql.SQL, params: Sequence[object]) -> Sequence[Any]:
        await self._ready()
        async with _atranslate(), self._exec.atomic():
            row = await self._exec.fetchone(query, params)
        row = _returned(row)
        return row

    async def _two(
        self,
        first: tuple[sql.Composed, list[object]],
        second: tuple[sql.Composed, list[object]],
    ) -> tuple[Sequence[Any], Sequence[Any]]:
        """Two statements in one transaction; the second takes the first's id first."""
        await self._ready()
        async with _atranslate(), self._exec.atomic():
            a = await self._exec.fetchone(*first)
            a = _returned(a)
            b = await self._exec.fetchone(second[0], [a[0], *second[1]])
            b = _returned(b)
        return a, b

    async def open_run(
        self,
        agent: str | None,
        scope: Scope | str | None,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        run_id: uuid.UUID | str | None = None,
        listener: int | None = None,
    ) -> AsyncRun:
        """See :meth:`Platform.open_run`."""
        query, params = _open_statement(agent, scope, labels, run_id, listener)
        row = await self._one(query, params)
        return AsyncRun(self, row[0], row[1], row[2], row[3])

    async def run(self, run_id: uuid.UUID | str) -> AsyncRun:
        """See :meth:`Platform.run`."""
        rid = _uuid(run_id, "run_id")
        await self._ready()
        async with _atranslate():
            row = await self._exec.fetchone(_RUN, [rid])
        if row is None:
            raise LookupError(f"run {rid} does not exist")
        return AsyncRun(self, row[0], row[1], row[2], row[3])

    async def decide_approval(self, request: int, granted: bool, reason: str | None = None) -> int:
        """See :meth:`Platform.decide_approval`."""
        if isinstance(request, bool) or not isinstance(request, int):
            raise TypeError(f"request must be an int, not {type(request).__name__}")
        row = await self._one(
            _DECIDE, [request, _bool(granted, "granted"), _opt_name(reason, "reason")]
        )
        return int(row[0])

    async def sync_tools(
        self,
        tools: Iterable[object],
        *,
        effects: Mapping[str, str] | None = None,
        trusted: Iterable[str] | Mapping[str, bool] | None = None,
    ) -> list[Tool]:
        """See :meth:`Platform.sync_tools`."""
        entries = _catalog(tools, effects=effects, trusted=trusted)
        await self._ready()
        async with _atranslate(), self._exec.atomic():
            await self._exec.executemany(
                _TOOLS_UPSERT,
                [[t.name, t.effect, t.trusted_output, d] for t, d in entries],
            )
        return [t for t, _ in entries]


class AsyncRun:
    """:class:`Run` for :class:`AsyncPlatform`: the same calls, awaited."""

    def __init__(
        self,
        platform: AsyncPlatform,
        run_id: uuid.UUID,
        agent: str | None,
        scope: Scope,
        labels: LabelSet,
    ) -> None:
        self.platform = platform
        self.id = run_id
        self.agent = agent
        self.scope = scope
        self.opened_labels = labels

    def __repr__(self) -> str:
        return f"<AsyncRun {self.id} {self.agent} in {self.scope}>"

    async def _step(self, kind: str, **columns: object) -> Step:
        query, params = _step_statement(self.id, kind, **columns)
        return _step(await self.platform._one(query, params))

    async def input(
        self,
        labels: LabelSet | str | Iterable[str],
        args: object = None,
        *,
        reason: str | None = None,
    ) -> Step:
        """See :meth:`Run.input`."""
        return await self._step(
            "input", labels=_labels(labels), args=_args(args), reason=_opt_name(reason, "reason")
        )

    async def gate(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> Decision:
        """See :meth:`Run.gate`."""
        row = await self.platform._one(
            _GATE, [self.id, _name(tool, "tool"), _args(args), _labels(labels)]
        )
        return Decision(row[0], row[1], row[2], row[3])

    async def call(
        self, tool: str, args: object = None, labels: LabelSet | str | Iterable[str] | None = None
    ) -> Step:
        """See :meth:`Run.call`."""
        return await self._step(
            "tool_called", tool=_name(tool, "tool"), args=_args(args), labels=_labels(labels)
        )

    async def result(
        self,
        tool: str,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        args: object = None,
    ) -> Step:
        """See :meth:`Run.result`."""
        return await self._step(
            "tool_result", tool=_name(tool, "tool"), labels=_labels(labels), args=_args(args)
        )

    async def request_approval(
        self,
        tool: str,
        args: object = None,
        *,
        labels: LabelSet | str | Iterable[str] | None = None,
        reason: str | None = None,
    ) -> int:
        """See :meth:`Run.request_approval`."""
        row = await self.platform._one(
            _REQUEST,
            [
                self.id,
                _name(tool, "tool"),
                _args(args),
                _labels(labels),
                _opt_name(reason, "reason"),
            ],
        )
        return int(row[0])

    async def share(
        self,
        content: str | bytes,
        *,
        to_scope: Scope | str | None = None,
        to_run: AsyncRun | Run | uuid.UUID | str | None = None,
        labels: LabelSet | str | Iterable[str] | None = None,
        description: str | None = None,
    ) -> Shared:
        """See :meth:`Run.share`."""
        _, _, artifact, share = _share_statements(
            self.id, content, to_scope, to_run, labels, description
        )
        arow, srow = await self.platform._two(artifact, share)
        return Shared(arow[0], srow[0], arow[1], arow[2], srow[1])

    async def read_context(self, artifact_id: uuid.UUID | str) -> Step:
        """See :meth:`Run.read_context`."""
        return await self._step("context_read", artifact_id=_uuid(artifact_id, "artifact_id"))

    async def approval(self, request: int) -> str | None:
        """See :meth:`Run.approval`."""
        if isinstance(request, bool) or not isinstance(request, int):
            raise TypeError(f"request must be an int, not {type(request).__name__}")
        await self.platform._ready()
        async with _atranslate():
            row = await self.platform._exec.fetchone(_APPROVAL, [self.id, request])
        return None if row is None else str(row[0])

    async def carried(self) -> LabelSet:
        """See :meth:`Run.carried`."""
        await self.platform._ready()
        async with _atranslate():
            row = await self.platform._exec.fetchone(_CARRIED, [self.id])
        if row is None:
            raise LookupError(f"run {self.id} does not exist")
        labels: LabelSet = row[0]
        return labels
