"""pg-labels-console --database URL --listen 127.0.0.1:8080"""

from __future__ import annotations

import argparse

import uvicorn

from .app import create_app


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="pg-labels-console", description="The pg_labels web console.")
    p.add_argument("--database", required=True,
                   help="libpq URL or conninfo of the database, without a user or password "
                        "(each person signs in as their own role)")
    p.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT to serve on (default 127.0.0.1:8080)")
    p.add_argument("--secure-cookies", action="store_true",
                   help="mark the session cookie Secure: set it when the console is served behind TLS")
    p.add_argument("--idle-timeout", type=float, default=30, metavar="MINUTES",
                   help="end a session after this many idle minutes (default 30)")
    a = p.parse_args(argv)
    host, _, port = a.listen.rpartition(":")
    app = create_app(a.database, secure_cookies=a.secure_cookies, idle_timeout=a.idle_timeout * 60)
    uvicorn.run(app, host=host.strip("[]") or "127.0.0.1", port=int(port), log_level="info",
                proxy_headers=False, server_header=False)


if __name__ == "__main__":
    main()
