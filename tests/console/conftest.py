"""Shared by the console's tests: the database run.sh made, and the ids of its scenario."""

from __future__ import annotations

import os
import re
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

DB_URL = os.environ["CONSOLE_DB_URL"]  # TCP, scram-sha-256: people sign in here
ADMIN_DSN = os.environ["CONSOLE_ADMIN_DSN"]  # the superuser, over the cluster's unix socket

PASSWORDS = {
    "console_ana": "ana-secret",  # analyst of acme/platform
    "console_apo": "apo-secret",  # approver, acme
    "console_self": "self-secret",  # approver who can act as the platform's writer
    "console_gina": "gina-secret",  # analyst of globex
    "console_nologin": "nologin-secret",
}


def admin(query: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(ADMIN_DSN, row_factory=dict_row, autocommit=True) as conn:
        return conn.execute(query, params or None).fetchall()  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def ids() -> dict[str, Any]:
    hostile = admin("SELECT id FROM pg_labels.runs WHERE agent LIKE '<script>%'")[0]["id"]
    reqs = admin(
        "SELECT id, tool, args FROM pg_labels.steps"
        " WHERE run_id = %s AND kind = 'approval_requested' ORDER BY id",
        hostile,
    )
    seed = admin(
        "SELECT id FROM pg_labels.runs WHERE listener_id IS NOT NULL ORDER BY opened_at LIMIT 1"
    )[0]["id"]
    support = admin(
        "SELECT run_id FROM pg_labels.steps WHERE kind = 'context_read' ORDER BY id LIMIT 1"
    )[0]["run_id"]
    finance = admin(
        "SELECT id FROM pg_labels.runs WHERE agent = 'finance-bot' ORDER BY opened_at LIMIT 1"
    )[0]["id"]
    globex = admin("SELECT id FROM pg_labels.runs WHERE agent = 'globex-bot'")[0]["id"]
    globex_req = admin(
        "SELECT id FROM pg_labels.steps WHERE run_id = %s AND kind = 'approval_requested'", globex
    )[0]["id"]
    wait_run = admin("SELECT id FROM pg_labels.runs WHERE agent = 'waiting-bot'")[0]["id"]
    waiting = admin(
        "SELECT id FROM pg_labels.steps"
        " WHERE run_id = %s AND kind = 'approval_requested' ORDER BY id",
        wait_run,
    )
    return {
        "wait_run": str(wait_run),
        "page_grant": waiting[0]["id"],
        "expired_request": waiting[1]["id"],
        "hostile_run": str(hostile),
        "grant_me": reqs[0]["id"],
        "deny_me": reqs[1]["id"],
        "self_try": reqs[2]["id"],
        "seed_run": str(seed),
        "support_run": str(support),
        "finance_run": str(finance),
        "globex_run": str(globex),
        "globex_request": globex_req,
    }


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, "no CSRF token in the page"
    return m.group(1)
