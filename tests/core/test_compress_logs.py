"""Log sanitizing: noise out, errors and key stack lines kept, repeats counted."""

from __future__ import annotations

import json

import pytest

from ctxlayer.core.compress import looks_like_log, sanitize_log

PYTEST_FAILURE = """\
============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-8.3.3, pluggy-1.5.0
rootdir: /home/dev/shop
configfile: pyproject.toml
plugins: asyncio-0.24.0, cov-5.0.0
collected 42 items

tests/test_api.py ....F.....                                             [ 23%]
tests/test_cart.py ..........                                            [ 47%]
tests/test_db.py ..........                                              [ 71%]
tests/test_users.py ............                                         [100%]

=================================== FAILURES ===================================
_______________________________ test_create_user _______________________________

client = <starlette.testclient.TestClient object at 0x7f3a2c1d9e50>

    def test_create_user(client):
        resp = client.post("/users", json={"name": "ada"})
>       assert resp.status_code == 201
E       assert 500 == 201
E        +  where 500 = <Response [500 Internal Server Error]>.status_code

tests/test_api.py:42: AssertionError
------------------------------ Captured log call -------------------------------
ERROR    shop.db:db.py:88 connection refused: could not connect to server at 127.0.0.1:5432
=========================== short test summary info ============================
FAILED tests/test_api.py::test_create_user - assert 500 == 201
========================= 1 failed, 41 passed in 3.21s =========================
"""

TRACEBACK = """\
2024-03-05T14:03:20.001Z ERROR [pid 4312] [Thread-3] shop.api: unhandled error in POST /orders request_id=5d0e8f7a-1234-4abc-9def-0123456789ab
Traceback (most recent call last):
  File "/srv/shop/.venv/lib/python3.11/site-packages/starlette/middleware/errors.py", line 162, in __call__
    await self.app(scope, receive, _send)
  File "/srv/shop/.venv/lib/python3.11/site-packages/starlette/routing.py", line 718, in __call__
    await route.handle(scope, receive, send)
  File "/srv/shop/.venv/lib/python3.11/site-packages/fastapi/routing.py", line 301, in app
    raw_response = await run_endpoint_function(
  File "/srv/shop/app/orders.py", line 57, in create_order
    total = compute_total(cart.items, coupon)
  File "/srv/shop/app/pricing.py", line 23, in compute_total
    return sum(i.price * i.qty for i in items) * (1 - coupon.rate)
  File "/usr/lib/python3.11/decimal.py", line 12, in __mul__
    raise TypeError(msg)
TypeError: unsupported operand type(s) for *: 'decimal.Decimal' and 'float'"""

NODE_STACK = """\
> shop-web@1.4.0 start
> node dist/server.js

[2024-03-05 14:03:21.552] [info] listening on :3000
[2024-03-05 14:03:25.101] [error] request failed id=0b7c6a1e-5f4d-4e3c-8b2a-1f0e9d8c7b6a
TypeError: Cannot read properties of undefined (reading 'price')
    at lineTotal (/srv/web/src/cart/total.ts:14:22)
    at Array.map (<anonymous>)
    at cartTotal (/srv/web/src/cart/total.ts:9:18)
    at /srv/web/node_modules/express/lib/router/layer.js:95:5
    at Layer.handle [as handle_request] (/srv/web/node_modules/express/lib/router/layer.js:95:5)
    at next (/srv/web/node_modules/express/lib/router/route.js:149:13)
    at Route.dispatch (/srv/web/node_modules/express/lib/router/route.js:119:3)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
[2024-03-05 14:03:25.340] [info] GET /cart 500 12.4ms
"""


def server_log(health_checks: int = 400) -> str:
    """A uvicorn-style server log: noisy health checks, one warning, one traceback."""
    lines = []
    for i in range(health_checks):
        lines.append(
            f"2024-03-05T14:{i // 60 % 60:02d}:{i % 60:02d}.{i * 7 % 1000:03d}Z INFO  [pid 4312] "
            f"[Thread-{i % 8}] uvicorn.access: 10.0.0.{i % 250}:5{i % 9}312 - "
            f'"GET /health HTTP/1.1" 200 request_id={i:08x}-aaaa-bbbb-cccc-{i:012x} duration_ms={i % 17}'
        )
        if i == health_checks // 3:
            lines.append("2024-03-05T14:02:30.123Z WARNING [pid 4312] shop.cache: miss ratio high")
        if i == health_checks // 2:
            lines.extend(TRACEBACK.splitlines())
    return "\n".join(lines) + "\n"


def check(text: str, keep_lines: int, present: list[str], absent: list[str] = ()):
    out = sanitize_log(text, keep_lines)
    for want in present:
        assert want in out, f"{want!r} missing from:\n{out}"
    for bad in absent:
        assert bad not in out, f"{bad!r} should be gone from:\n{out}"
    return out


NOISE_CASES = [
    ("iso timestamp", "2024-03-05T14:03:20.001Z ERROR boom", ["ERROR boom"], ["2024", "14:03"]),
    ("space timestamp", "2024-03-05 14:03:20,001 WARNING x", ["WARNING x"], ["2024-03-05"]),
    (
        "syslog",
        "Mar  5 14:03:20 host sshd[1234]: Failed password",
        ["Failed password"],
        ["14:03:20", "1234"],
    ),
    ("bare time", "14:03:20.123 INFO started", ["INFO started"], ["14:03"]),
    (
        "uuid",
        "ERROR job 5d0e8f7a-1234-4abc-9def-0123456789ab failed",
        ["job <uuid> failed"],
        ["5d0e8f7a"],
    ),
    ("hex address", "ERROR object at 0x7f3a2c1d9e50 freed", ["object at 0x… freed"], ["7f3a2c"]),
    (
        "noise fields",
        "ERROR db down request_id=abc123 pid=42 duration_ms=17 host=web-1",
        ["ERROR db down"],
        ["request_id", "pid=", "duration_ms", "host="],
    ),
    (
        "meaningful fields kept",
        "ERROR db down user=ada table=orders",
        ["user=ada table=orders"],
        [],
    ),
    ("durations", "INFO GET /cart 500 in 12.4ms", ["INFO GET /cart 500"], ["12.4ms", "500 in"]),
    ("thread names", "[MainThread] [pool-1-thread-3] ERROR x", ["ERROR x"], ["Thread"]),
    ("ansi colours", "\x1b[31mERROR\x1b[0m red", ["ERROR red"], ["\x1b"]),
    ("paths with ts extension survive", "    at f (/srv/a/total.ts:14:22)", ["total.ts:14:22"], []),
]


@pytest.mark.parametrize(
    ("text", "present", "absent"), [c[1:] for c in NOISE_CASES], ids=[c[0] for c in NOISE_CASES]
)
def test_noise_is_removed(text, present, absent):
    check(text, 60, present, absent)


def test_python_traceback_in_server_log_keeps_error_and_key_frames():
    out = check(
        server_log(),
        60,
        [
            "ERROR shop.api: unhandled error in POST /orders",
            "Traceback (most recent call last):",
            'File "/srv/shop/.venv/lib/python3.11/site-packages/starlette/middleware/errors.py"',  # first
            "[... 2 library frames]",
            'File "/srv/shop/app/orders.py", line 57, in create_order',  # own code
            "total = compute_total(cart.items, coupon)",
            'File "/srv/shop/app/pricing.py", line 23, in compute_total',
            'File "/usr/lib/python3.11/decimal.py", line 12, in __mul__',  # last
            "TypeError: unsupported operand type(s) for *: 'decimal.Decimal' and 'float'",
            "WARNING shop.cache: miss ratio high",
            '"GET /health HTTP/1.1" 200 (x400)',
        ],
        ["starlette/routing.py", "request_id", "[pid", "2024-03-05"],
    )
    assert out.splitlines()[-1].startswith("[log sanitized: 416 lines in")
    assert "399 repeats collapsed" in out
    assert len(out.splitlines()) < 25


def test_pytest_failure_keeps_assertion_location_and_summary():
    out = check(
        PYTEST_FAILURE,
        12,
        [
            "> assert resp.status_code == 201",
            "E assert 500 == 201",
            "tests/test_api.py:42: AssertionError",
            "ERROR shop.db:db.py:88 connection refused",
            "FAILED tests/test_api.py::test_create_user - assert 500 == 201",
            "1 failed, 41 passed",
        ],
        ["0x7f3a2c1d9e50", "3.21s"],
    )
    assert "dropped" in out.splitlines()[-1]


def test_js_stack_keeps_message_own_frames_and_ends():
    check(
        NODE_STACK,
        30,
        [
            "TypeError: Cannot read properties of undefined (reading 'price')",
            "at lineTotal (/srv/web/src/cart/total.ts:14:22)",
            "at cartTotal (/srv/web/src/cart/total.ts:9:18)",
            "[... 4 library frames]",
            "at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
        ],
        ["route.js:149", "0b7c6a1e"],
    )


def test_json_log_lines_lose_noise_keys_and_expand_stacks():
    records = [
        json.dumps(
            {
                "ts": f"2024-01-01T00:00:{i % 60:02d}Z",
                "level": "info",
                "logger": "api",
                "msg": "request done",
                "pid": 42,
                "duration_ms": i,
            }
        )
        for i in range(300)
    ]
    records.insert(
        150,
        json.dumps(
            {
                "time": "2024-01-01T00:02:30Z",
                "level": "error",
                "msg": "db failed",
                "pid": 42,
                "stack": 'Traceback (most recent call last):\n  File "/app/db.py", line 9, in connect\n'
                "    sock.connect(addr)\nConnectionRefusedError: [Errno 111] Connection refused",
            }
        ),
    )
    out = check(
        "\n".join(records),
        20,
        [
            "INFO api: request done (x300)",
            "ERROR db failed",
            'File "/app/db.py", line 9, in connect',
            "ConnectionRefusedError: [Errno 111] Connection refused",
        ],
        ['"pid"', "duration_ms", "2024-01-01"],
    )
    assert "301 lines in" in out


def test_keep_lines_caps_output_and_prefers_errors():
    text = "\n".join(
        [f"INFO step {i} of the job went fine with item-{i}-abc" for i in range(200)]
        + ["ERROR disk full on /var"]
        + [f"DEBUG tick {chr(97 + i % 26)}x" for i in range(50)]
    )
    out = sanitize_log(text, keep_lines=5)
    body = [ln for ln in out.splitlines() if not ln.startswith("[")]
    assert len(body) <= 5
    assert "ERROR disk full on /var" in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PYTEST_FAILURE, True),
        (NODE_STACK, True),
        (TRACEBACK, True),
        (server_log(20), True),
        ("just a paragraph of prose about the weather.\nand another line.\nand a third.", False),
        ('{"a": 1, "b": [1, 2, 3]}', False),
        ("def f(x):\n    return x + 1\n\nclass A:\n    pass\n", False),
        ("", False),
        ("INFO a\nWARN b\nERROR c", True),
    ],
)
def test_looks_like_log(text, expected):
    assert looks_like_log(text) is expected


def test_a_kept_line_is_quoted_as_it_was_its_own_empty_brackets_too():
    """Noise goes with the brackets it leaves empty ("[pid 12]", "(3.2s)"), a line's own
    brackets stay: the outline quotes `    do()`, not `    do`."""
    from ctxlayer.core.compress.logs import sanitize_log

    log = "\n".join(["INFO start"] * 5 + [
        "Traceback (most recent call last):", '  File "/app/x.py", line 3, in run',
        "    do()", "    items[]", "ValueError: boom"] + ["INFO tick 1"] * 50)
    out = sanitize_log(log, 20).split("\n")
    assert "    do()" in out and "    items[]" in out
    noisy = sanitize_log("ERROR [pid 1234] worker failed (3.2s)\n" * 3, 10)
    assert "ERROR worker failed" in noisy and "[]" not in noisy and "()" not in noisy


def test_an_index_in_brackets_is_quoted_a_pid_in_brackets_goes():
    """A number in brackets right after a name is an index the line means: `handle(jobs[10])`
    came back as `handle(jobs)` and `IndexError at items[1234]` as `IndexError at items`
    (`jobs[9]`, one digit, stayed, so one error read as two). A pid standing alone or in
    syslog's `sshd[1234]:` still goes."""
    lines = ["Traceback (most recent call last):", '  File "/app/w.py", line 9, in run',
             "    handle(jobs[10])", "    x = matrix[12][34] + f([56])",
             "IndexError at items[1234]"]
    out = sanitize_log("\n".join(["INFO start"] * 5 + lines + ["INFO tick"] * 40), 20)
    for line in lines[2:]:
        assert line in out.split("\n"), line
    noisy = sanitize_log("Dec  1 host sshd[4321]: session opened\n[4312] worker up\n" * 3, 10)
    assert "4321" not in noisy and "4312" not in noisy and "sshd: session opened" in noisy


def test_a_log_outline_read_once_renders_every_size_as_a_fresh_one():
    """The tool-output outline tries one log at several sizes and reads it once (LogOutline):
    each size is what sanitizing from scratch gives, in any order: a long stack cut for a
    small size does not stay cut for the next."""
    from ctxlayer.core.compress.logs import LogOutline

    for text in (server_log(), PYTEST_FAILURE, server_log(20) + "\n" + PYTEST_FAILURE * 3):
        outline = LogOutline(text)
        for keep in (60, 3, 12, 2, 60, 1, 0, 400):
            assert outline.render(keep) == sanitize_log(text, keep), keep


def _jobs_log() -> list[str]:
    """Noise with numbers, warnings, error lines and tracebacks repeated with other numbers."""
    lines = []
    for k in range(120):
        lines.append(f"2026-01-01 10:{k // 60:02d}:{k % 60:02d} INFO batch {k} done")
        if k % 9 == 4:
            lines += ["Traceback (most recent call last):",
                      f'  File "/srv/app/worker.py", line {100 + k}, in run', "    handle(job)",
                      f"KeyError: 'job-{1000 + k}'"]
        if k % 13 == 7:
            lines.append(f"2026-01-01 10:00:00 ERROR job {k} failed: disk {k % 3} full")
        if k % 17 == 0:
            lines.append(f"2026-01-01 10:00:00 WARNING retry {k}")
    return lines


@pytest.mark.parametrize("text", [_jobs_log(), server_log().splitlines()], ids=["jobs", "server"])
def test_the_lines_between_shown_ends_outline_as_if_alone(text):
    """An outline beside the log's first and last lines (shown whole) outlines the lines
    between as their own outline would: a run whose first lay in the first lines vanished
    from it (26 KeyErrors between said nowhere), and one counted with its repeats among the
    last lines said more than the lines between hold."""
    from ctxlayer.core.compress.logs import LogOutline

    outline = LogOutline("\n".join(text))
    cuts = [k for k, line in enumerate(text) if line.startswith("2026-01-01 10:0")
            or "GET /health" in line]
    for head, tail in ((cuts[5], cuts[-5]), (cuts[40], cuts[-30]), (cuts[1], cuts[90]),
                       (cuts[0], cuts[-1]), (cuts[60], cuts[61])):
        alone = LogOutline("\n".join(text[head:tail]))
        for keep in (3, 8, 20, 60, 400):
            between = outline.render(keep, (head, tail)).split("\n")[:-1]
            assert between == alone.render(keep).split("\n")[:-1], (head, tail, keep)
