"""What both forms of the platform's calls share: the values they return, the checks of their
arguments, the statements they send (every value a parameter) and the translation of a
refusal into its exception. No I/O here: :mod:`._async` sends the statements (and
:mod:`._sync` is generated from it)."""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from .._errors import refusal_from
from .._values import LabelSet, Scope


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


#: What :meth:`Run.wait_for_decision` waits for at most by default, in seconds.
WAIT_TIMEOUT: Final = 300.0
#: The channel the database announces approval requests and decisions on (payload: the
#: request's id).
APPROVALS_CHANNEL: Final = "pg_labels_approvals"


@dataclass(frozen=True)
class ApprovalDecision:
    """What became of an approval request (``pg_labels.approval_requests``).

    ``status`` is ``granted``, ``denied``, ``withdrawn`` (the requester stopped waiting),
    ``expired`` (past ``expires_at`` without a decision), ``pending`` (read without waiting)
    or ``timeout`` (still pending when the wait ended); ``reason`` is the approver's (or the
    withdrawal's), ``decided_by`` the role that decided, ``decision_id`` the
    ``approval_decided`` step."""

    request_id: int
    status: str
    reason: str | None = None
    decided_by: str | None = None
    decision_id: int | None = None
    decided_at: datetime.datetime | None = None
    expires_at: datetime.datetime | None = None

    @property
    def granted(self) -> bool:
        return self.status == "granted"

    @property
    def decided(self) -> bool:
        """Whether the request is answered for good (neither ``pending`` nor ``timeout``)."""
        return self.status not in ("pending", "timeout")


@dataclass(frozen=True)
class Shared:
    """An artifact recorded by a run and the share that offers it."""

    artifact_id: uuid.UUID
    share_id: int
    digest: str
    labels: LabelSet
    to_scope: Scope


class _RunHandle:
    """What ``Run`` and ``AsyncRun`` are both: a run's handle, which names the run wherever
    a run's id is asked for (``to_run=``)."""

    id: uuid.UUID


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
    if isinstance(value, _RunHandle):
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


def _request(value: object) -> int:
    """An approval request's id (a step's): an int, not a bool."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"request must be an int, not {type(value).__name__}")
    return value


def _timeout(value: object) -> float:
    """A wait's bound in seconds: a finite number, not negative (0 reads once)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, not {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"timeout must be a finite number of seconds, 0 or more, not {value}")
    return seconds


def _ttl(value: object) -> datetime.timedelta:
    """A request's time to live: a ``timedelta`` or seconds, more than 0."""
    if isinstance(value, datetime.timedelta):
        ttl = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValueError(f"ttl must be finite, not {value}")
        ttl = datetime.timedelta(seconds=value)
    else:
        raise TypeError(f"ttl must be a timedelta or seconds, not {type(value).__name__}")
    if ttl <= datetime.timedelta(0):
        raise ValueError(f"ttl must be more than 0, not {ttl}")
    return ttl


def _listener(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"listener must be an int (a listener's id), not {type(value).__name__}")
    return value


def _digest(content: object) -> str:
    if isinstance(content, str):
        data = content.encode()
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------------------------

#: A statement and its parameters.
Statement = tuple[sql.SQL, list[object]]


@functools.lru_cache(maxsize=256)
def _insert(table: str, columns: tuple[str, ...], returning: str) -> sql.SQL:
    """``INSERT INTO pg_labels.<table> (<columns>) VALUES (%s, ...) RETURNING <returning>``:
    the names are the package's own, every value a parameter. Composed once per table and
    columns (composing it again for every statement cost about 0.08 ms a step)."""
    composed = sql.SQL("INSERT INTO {} ({}) VALUES ({}) RETURNING {}").format(
        sql.Identifier("pg_labels", table),
        sql.SQL(", ").join(map(sql.Identifier, columns)),
        sql.SQL(", ").join(sql.Placeholder() * len(columns)),
        sql.SQL(returning),
    )
    return sql.SQL(composed.as_string(None))


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


def _step_statement(run: uuid.UUID, kind: str, **columns: object) -> Statement:
    names = ["run_id", "kind"]
    values: list[object] = [run, kind]
    for name, value in columns.items():
        if value is not None:
            names.append(name)
            values.append(value)
    return _insert("steps", tuple(names), _STEP_RETURNING), values


def _open_statement(
    agent: object, scope: object, labels: object, run_id: object, listener: object
) -> Statement:
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
    return _insert("runs", tuple(names), "id, agent, scope, labels"), values


_SHARE_COLUMNS: Final = "id, to_scope"


def _share_statements(
    run: uuid.UUID,
    content: object,
    to_scope: object,
    to_run: object,
    labels: object,
    description: object,
) -> tuple[Statement, Statement]:
    """The artifact's ``INSERT`` and the share's, whose first parameter (the artifact's id)
    the caller puts first."""
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
    artifact = (_insert("artifacts", tuple(names), "id, digest, labels"), values)
    snames = ["artifact_id"]
    svalues: list[object] = []
    for name, value in (("to_scope", scope), ("to_run", target)):
        if value is not None:
            snames.append(name)
            svalues.append(value)
    share = (_insert("shares", tuple(snames), _SHARE_COLUMNS), svalues)
    return artifact, share


_GATE: Final = sql.SQL("SELECT decision, rule, reason, step_id FROM pg_labels.gate(%s, %s, %s, %s)")
_REQUEST: Final = sql.SQL("SELECT pg_labels.request_approval(%s, %s, %s, %s, %s)")
_REQUEST_TTL: Final = sql.SQL("SELECT pg_labels.request_approval(%s, %s, %s, %s, %s, %s)")
_DECIDE: Final = sql.SQL("SELECT pg_labels.decide_approval(%s, %s, %s)")
_WITHDRAW: Final = sql.SQL("SELECT pg_labels.withdraw_approval(%s, %s)")
_CARRIED: Final = sql.SQL("SELECT labels FROM pg_labels.runs WHERE id = %s")
_APPROVAL: Final = sql.SQL(
    "SELECT decision FROM pg_labels.steps "
    "WHERE run_id = %s AND kind = 'approval_decided' AND request_id = %s"
)
_REQUEST_COLUMNS: Final = (
    "status, decision_reason, decided_by, decision_id, decided_at, expires_at, "
    "extract(epoch FROM expires_at - now())::float8"
)
_APPROVAL_STATE: Final = sql.SQL(
    "SELECT " + _REQUEST_COLUMNS + " FROM pg_labels.approval_requests WHERE id = %s AND run_id = %s"
)
_PENDING_REQUEST: Final = sql.SQL(
    "SELECT id FROM pg_labels.approval_requests WHERE run_id = %s AND tool = %s "
    "AND args IS NOT DISTINCT FROM %s AND used_by IS NULL ORDER BY id DESC LIMIT 1"
)
_RUN: Final = sql.SQL("SELECT id, agent, scope, labels FROM pg_labels.runs WHERE id = %s")


class _Wait:
    """The bound of one wait: the earlier of ``timeout`` seconds from now and the request's
    ``expires_at`` (as the database's clock tells it, in each row read)."""

    def __init__(self, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout

    def left(self, row: Sequence[Any] | None) -> float | None:
        """Seconds still to wait after reading ``row``; ``None`` when the request is
        answered (or cannot be read)."""
        if row is None or row[0] != "pending":
            return None
        left = self.deadline - time.monotonic()
        if row[6] is not None:
            left = min(left, float(row[6]))
        return left


def _approval_decision(
    request: int, run: uuid.UUID, row: Sequence[Any] | None, waited: bool = False
) -> ApprovalDecision:
    if row is None:
        raise LookupError(
            f"approval request {request} of run {run} does not exist or cannot be read "
            "by this role (pg_labels.approval_requests)"
        )
    status = str(row[0])
    if waited and status == "pending":
        status = "timeout"
    return ApprovalDecision(request, status, row[1], row[2], row[3], row[4], row[5])


@contextmanager
def _translate() -> Iterator[None]:
    """Raise a pg_labels refusal as its :class:`Refusal` (``from`` the driver's error), for
    either driver (around awaited statements too)."""
    try:
        yield
    except Exception as err:
        refusal = refusal_from(err)
        if refusal is not None:
            raise refusal from err
        raise
