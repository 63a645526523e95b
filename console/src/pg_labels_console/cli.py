"""pg-labels-console --database URL --listen 127.0.0.1:8080
pg-labels-console notify --database URL --role ROLE --console-url URL (docs/console.md)"""

from __future__ import annotations

import argparse
import sys

import uvicorn

from pg_labels.timely import TimelyH11

from .app import REFRESH, create_app


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["notify"]:
        from .notify import main as notify

        notify(args[1:])
        return
    p = argparse.ArgumentParser(
        prog="pg-labels-console",
        description="The pg_labels web console. "
        "(`pg-labels-console notify --help`: the notifier, which posts new approval requests "
        "to a webhook.)",
    )
    p.add_argument(
        "--database",
        required=True,
        help="libpq URL or conninfo of the database, without a user or password "
        "(each person signs in as their own role)",
    )
    p.add_argument(
        "--listen", default="127.0.0.1:8080", help="HOST:PORT to serve on (default 127.0.0.1:8080)"
    )
    p.add_argument(
        "--secure-cookies",
        action="store_true",
        help="mark the session cookie Secure: set it when the console is served behind TLS",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=30,
        metavar="MINUTES",
        help="end a session after this many idle minutes (default 30)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=50,
        metavar="N",
        help="signed-in sessions (each a database connection of its role) in all (default 50)",
    )
    p.add_argument(
        "--max-connections-per-role",
        type=int,
        default=5,
        metavar="N",
        help="signed-in sessions of one role; its least recently used one ends when it signs in "
        "once more (default 5)",
    )
    p.add_argument(
        "--approvals-refresh",
        type=int,
        default=REFRESH,
        metavar="SECONDS",
        help=f"the approvals queue reloads itself this often (default {REFRESH}; 0: never)",
    )
    a = p.parse_args(args)
    if a.approvals_refresh < 0:
        p.error("--approvals-refresh must be 0 or more")
    if a.max_connections < 1 or a.max_connections_per_role < 1:
        p.error("--max-connections and --max-connections-per-role must be at least 1")
    host, _, port = a.listen.rpartition(":")
    app = create_app(
        a.database,
        secure_cookies=a.secure_cookies,
        idle_timeout=a.idle_timeout * 60,
        max_connections=a.max_connections,
        per_role=a.max_connections_per_role,
        refresh=a.approvals_refresh,
    )
    uvicorn.run(
        app,
        host=host.strip("[]") or "127.0.0.1",
        port=int(port),
        log_level="info",
        proxy_headers=False,
        server_header=False,
        limit_concurrency=a.max_connections + 50,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=16 * 1024,
        http=TimelyH11,
    )


if __name__ == "__main__":
    main()
