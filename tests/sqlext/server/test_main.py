"""The dyntable-server command line: password lines and usage errors (no Spark is started)."""

from __future__ import annotations

import io
import sys

from sqlext.server.auth import UsersFile
from sqlext.server.main import EXIT_OK, EXIT_USAGE, build_parser, main


def test_hash_password_line_from_stdin(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "stdin", io.StringIO("pa:ss word\n"))
    assert main(["--hash-password", "alice"]) == EXIT_OK
    line = capsys.readouterr().out.strip()
    path = tmp_path / "users"
    path.write_text(line + "\n")
    users = UsersFile.load(str(path))
    assert users.check("alice", "pa:ss word") and not users.check("alice", "pa:ss")


def test_hash_password_refuses_empty_password_and_bad_user(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    assert main(["--hash-password", "alice"]) == EXIT_USAGE
    assert main(["--hash-password", "a:b"]) == EXIT_USAGE


def test_usage_errors(capsys, tmp_path):
    assert main(["--auth", "PLAIN"]) == EXIT_USAGE
    assert "--users" in capsys.readouterr().err
    assert main(["--users", str(tmp_path / "x")]) == EXIT_USAGE
    assert main(["--conf", "novalue"]) == EXIT_USAGE
    assert main(["--auth", "NONE", "--max-sessions", "0"]) == EXIT_USAGE


def test_defaults_bind_loopback():
    args = build_parser().parse_args([])
    assert (args.host, args.port, args.auth, args.max_sessions) == ("127.0.0.1", 10000, "NONE", 64)
    assert build_parser().parse_args(["--auth", "nosasl"]).auth == "NOSASL"


def test_long_poll_setting_is_checked_before_spark_starts(capsys):
    assert main(["--conf", "hive.server2.long.polling.timeout=soon"]) == EXIT_USAGE
    assert "hive.server2.long.polling.timeout: 'soon' is not a time" in capsys.readouterr().err
