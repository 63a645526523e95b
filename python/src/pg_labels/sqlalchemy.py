"""SQLAlchemy 2 column types for ``scope`` and ``labelset``.

``Column(ScopeType())`` and ``Column(LabelSetType())`` read :class:`Scope` and
:class:`LabelSet` values and accept them (or their text) as parameters, with any driver:
values are sent as text and cast to the type, and read from text when the driver has not
been registered (a registered psycopg or asyncpg connection hands over the values already).
``schema`` names the schema the extension's types are in when it is not on the search path.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.sql.expression import cast
from sqlalchemy.types import UserDefinedType

from ._values import LabelSet, Scope

__all__ = ["LabelSetType", "ScopeType"]


class _PgLabelsType(UserDefinedType[Any]):
    cache_ok = True
    _name = ""
    _cls: type[Scope] | type[LabelSet] = Scope

    def __init__(self, schema: str | None = None) -> None:
        self.schema = schema

    def get_col_spec(self, **kw: Any) -> str:
        if self.schema is None:
            return self._name
        return f'"{self.schema.replace(chr(34), chr(34) * 2)}".{self._name}'

    def bind_expression(self, bindvalue: BindParameter[Any]) -> ColumnElement[Any]:
        # Send text and let the server parse it: any driver, any registration.
        return cast(bindvalue, self)

    def bind_processor(self, dialect: Dialect) -> Any:
        cls = self._cls

        def process(value: object) -> str | None:
            if value is None:
                return None
            if isinstance(value, cls):
                return str(value)
            if isinstance(value, str):
                return str(cls(value))
            raise TypeError(f"expected {cls.__name__} or str, got {type(value).__name__}")

        return process

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        cls = self._cls

        def process(value: object) -> object:
            if value is None or isinstance(value, cls):
                return value
            if isinstance(value, str):
                return cls(value)
            raise TypeError(f"cannot read {type(value).__name__} as {cls.__name__}")

        return process

    @property
    def python_type(self) -> type[Any]:
        return self._cls


class ScopeType(_PgLabelsType):
    """The ``scope`` column type: values are :class:`pg_labels.Scope`."""

    cache_ok = True
    _name = "scope"
    _cls = Scope


class LabelSetType(_PgLabelsType):
    """The ``labelset`` column type: values are :class:`pg_labels.LabelSet`."""

    cache_ok = True
    _name = "labelset"
    _cls = LabelSet
