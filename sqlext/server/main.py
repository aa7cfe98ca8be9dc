"""`dyntable-server`: the command line that starts the HiveServer2-protocol server on one SparkSession.

``--conf`` means what it means for ``dyntable-sql``: ``spark.*`` keys configure Spark,
``catalog.*`` keys are storage options of the warehouse, ``hive.server2.long.polling.timeout``
is the server's (HiveServer2's name), other keys are session options every client session
starts with. ``--hash-password`` prints a users-file line and exits.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import signal
import sys
import threading
from typing import Any

from sqlext.errors import SqlError
from sqlext.server.auth import AUTH_MODES, Authenticator, UsersFile, hash_password

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dyntable-server",
        description="Serve dyntable SQL to JDBC/ODBC/BI clients over the HiveServer2 Thrift protocol.",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s, loopback only)"
    )
    p.add_argument("--port", type=int, default=10000, help="port (default: %(default)s)")
    p.add_argument("--warehouse", default="./warehouse", help="warehouse path or URL (default: %(default)s)")
    p.add_argument("--master", default="local[*]", help="Spark master (default: %(default)s)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="spark.* keys configure Spark, catalog.* keys are storage options, other keys "
                   "are session options of every client session (repeatable)")
    p.add_argument(
        "--auth",
        choices=AUTH_MODES,
        default="NONE",
        type=str.upper,
        help="NONE: SASL PLAIN, any password (default); PLAIN: SASL PLAIN checked against --users; "
        "NOSASL: no SASL layer (JDBC URL needs ;auth=noSasl)",
    )
    p.add_argument("--users", metavar="FILE", help="users file of user:hash lines (required by --auth PLAIN)")
    p.add_argument(
        "--max-sessions",
        type=int,
        default=64,
        help="most client sessions open at once (default: %(default)s)",
    )
    p.add_argument(
        "--hash-password",
        metavar="USER",
        help="print a users-file line for USER (password read from "
        "the terminal, or the first line of stdin) and exit",
    )
    p.add_argument("--verbose", action="store_true", help="log each connection and session")
    return p


def _password_line(user: str) -> str:
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {user}: ")
        if getpass.getpass("again: ") != password:
            raise ValueError("the passwords differ")
    else:
        password = sys.stdin.readline().rstrip("\n")
    if not password:
        raise ValueError("an empty password is not allowed")
    return f"{user}:{hash_password(password)}"


def main(argv: list[str] | None = None, *, ready: Any = None) -> int:
    """Run the server until SIGINT/SIGTERM. ``ready(server)`` is called once it listens (tests)."""
    args = build_parser().parse_args(argv)
    if args.hash_password:
        if ":" in args.hash_password:
            print("dyntable-server: error: a user name cannot contain ':'", file=sys.stderr)
            return EXIT_USAGE
        try:
            print(_password_line(args.hash_password))
        except ValueError as e:
            print(f"dyntable-server: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    from sqlext.server.sessions import DEFAULT_LONG_POLL, LONG_POLL_SETTING, long_poll_seconds
    from sqlext.spark import parse_conf

    try:
        spark_conf, session_conf = parse_conf(args.conf)
        users = None
        if args.auth == "PLAIN":
            if not args.users:
                raise ValueError("--auth PLAIN needs --users FILE (lines made by --hash-password)")
            users = UsersFile.load(args.users)
        elif args.users:
            raise ValueError("--users is only used with --auth PLAIN")
        if args.max_sessions < 1:
            raise ValueError("--max-sessions must be at least 1")
        long_poll = DEFAULT_LONG_POLL
        if LONG_POLL_SETTING in session_conf:  # HiveServer2's own setting, read by the server itself
            long_poll = long_poll_seconds(session_conf.pop(LONG_POLL_SETTING))
    except (ValueError, OSError, SqlError) as e:
        print(f"dyntable-server: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from sqlext.server.sessions import ServerState
    from sqlext.server.thrift_service import HiveServer
    from sqlext.session import CATALOG_PREFIX, conf_value
    from sqlext.spark import build_spark

    warehouse = args.warehouse if "://" in args.warehouse else os.path.abspath(args.warehouse)
    catalog_options = {k[len(CATALOG_PREFIX):]: conf_value(v) for k, v in session_conf.items()
                       if k.startswith(CATALOG_PREFIX)}
    session_conf = {k: v for k, v in session_conf.items() if not k.startswith(CATALOG_PREFIX)}
    spark_conf.setdefault("dyntable.log-level", "ERROR")
    spark = build_spark(args.master, spark_conf)
    state = ServerState(spark, warehouse, conf=session_conf, max_sessions=args.max_sessions,
                        catalog_options=catalog_options, long_poll=long_poll)
    try:
        server = HiveServer(state, args.host, args.port, auth=args.auth, authenticator=Authenticator(users))
    except OSError as e:
        print(
            f"dyntable-server: error: cannot listen on {args.host}:{args.port}: {e.strerror or e}",
            file=sys.stderr,
        )
        spark.stop()
        return EXIT_FAILED
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    print(
        f"dyntable-server listening on {server.host}:{server.port} (auth {args.auth}, warehouse {warehouse})",
        file=sys.stderr,
        flush=True,
    )
    if ready is not None:
        ready(server)
    stop.wait()
    server.stop()
    spark.stop()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
