"""What the drivers share and needs no driver."""

from __future__ import annotations

from typing import Final

#: The schema the extension's types are in.
EXTENSION_SCHEMA: Final = (
    "SELECT n.nspname FROM pg_catalog.pg_extension e "
    "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_labels'"
)
