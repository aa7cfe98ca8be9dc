"""Reading ``hive.server2.long.polling.timeout`` as HiveServer2 does (no Spark)."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from sqlext.server.sessions import long_poll_seconds


@pytest.mark.parametrize(("text", "seconds"), [
    ("5000", 5.0),  # a bare number is milliseconds
    ("5000ms", 5.0),
    ("250 msec", 0.25),
    ("5s", 5.0),
    ("5secs", 5.0),
    ("1min", 60.0),
    ("2 mins", 120.0),
    ("1h", 3600.0),
    ("0", 0.0),
    ("1.5s", 1.5),
])
def test_hive_time_values(text, seconds):
    assert long_poll_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "-1s", "5 fortnights", "s"])
def test_what_is_not_a_time_is_refused(text):
    with pytest.raises(SqlError) as info:
        long_poll_seconds(text)
    assert info.value.sqlstate == "22023" and "hive.server2.long.polling.timeout" in str(info.value)
