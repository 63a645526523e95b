"""The pg-labels-mcp command."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import anyio
import psycopg

from pg_labels import LabelSet

from .common import GatewayError, _unwrap
from .config import Config, _settings
from .gateway import Gateway

log = logging.getLogger("pg_labels.mcp")


async def _main(config: Config, check: bool, accept: bool = False) -> int:
    gateway = Gateway(config)
    async with gateway.connected(accept=accept):
        if check:
            print(f"pg-labels-mcp: runs of agent {config.agent} in scope {config.scope}", end="")
            print(f" carrying {LabelSet(config.labels)}" if config.labels else "")
            width = max((len(t.name) for t in gateway.catalog), default=4)
            for tool in gateway.catalog:
                trust = "trusted output" if tool.trusted_output else "untrusted output"
                line = f"{tool.name:<{width}}  {tool.effect:<16}  {trust:<16}  set by {tool.set_by}"
                if tool.change is not None:
                    line += f"; REFUSED: {tool.change}"
                print(line)
            return 0
        if config.listen:
            await gateway.serve_http(config.listen)
        else:
            await gateway.serve_stdio()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pg-labels-mcp`` command."""
    try:
        config, check, verbose, accept = _settings(argv)
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.INFO if verbose else logging.WARNING,
            format="pg-labels-mcp: %(message)s",
        )
        return anyio.run(_main, config, check, accept)
    except (ValueError, OSError, psycopg.Error) as err:
        print(f"pg-labels-mcp: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        leaf = _unwrap(err)
        if isinstance(leaf, (GatewayError, ValueError, OSError, psycopg.Error)):
            print(f"pg-labels-mcp: {leaf}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
