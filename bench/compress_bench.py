"""Throughput of the compression toolkit on generated multi-MB inputs (MB/s, best of 3).

Run: .venv/bin/python bench/compress_bench.py
"""

from __future__ import annotations

import json
import time

from ctxlayer.core.compress import (
    NoveltyIndex,
    compress_prose,
    extract_facts,
    outline_json,
    sanitize_log,
)


def json_doc(n: int) -> str:
    rows = [
        {
            "id": i,
            "login": f"user{i}",
            "email": None if i % 9 == 0 else f"user{i}@example.com",
            "roles": ["admin", "editor", "viewer"][: i % 4],
            "profile": {"display_name": f"User Number {i}", "locale": "en-GB", "age": 20 + i % 50},
            "events": [{"t": j, "kind": "click", "target": f"#btn-{j}"} for j in range(i % 5)],
        }
        for i in range(n)
    ]
    return json.dumps({"data": rows, "meta": {"total": n}})


def server_log(n: int) -> str:
    lines = []
    for i in range(n):
        lines.append(
            f"2024-03-05T14:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z INFO [pid 4312] "
            f"[Thread-{i % 8}] uvicorn.access: 10.0.0.{i % 250}:5{i % 9}312 - "
            f'"GET /items/{i % 977} HTTP/1.1" 200 request_id={i:08x}-aaaa-bbbb-cccc-{i:012x} '
            f"duration_ms={i % 17}"
        )
        if i % 5000 == 2500:
            lines += [
                f"2024-03-05T14:00:00Z ERROR [pid 4312] shop.api: unhandled error #{i}",
                "Traceback (most recent call last):",
                '  File "/srv/.venv/lib/python3.11/site-packages/starlette/routing.py", line 718, in h',
                "    await route.handle(scope, receive, send)",
                '  File "/srv/shop/app/orders.py", line 57, in create_order',
                "    total = compute_total(cart.items, coupon)",
                "TypeError: unsupported operand type(s) for *: 'Decimal' and 'float'",
            ]
    return "\n".join(lines)


def prose(paragraphs: int) -> str:
    parts = []
    for i in range(paragraphs):
        parts.append(
            f"Paragraph {i} explains how the trim engine handles message {i}. "
            f"It keeps pinned items and drops ephemeral thinking after {i % 7} turns. "
            f"We saw `ValueError` in src/core/trim_{i % 40}.py at line {i % 300} once. "
            "Most of the rest is filler text that a reader would happily skip over. "
            "The budget is filled from the newest message backwards."
        )
        if i % 20 == 0:
            parts.append(f"```python\ndef f_{i}(x):\n    return x + {i}\n```")
    return "\n\n".join(parts)


def rate(name: str, fn, text: str) -> None:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        out = fn(text)
        best = min(best, time.perf_counter() - t0)
    mb = len(text.encode()) / 1e6
    size = len(out) if hasattr(out, "__len__") else out
    print(
        f"{name:<16} {mb:6.1f} MB in {best * 1000:7.1f} ms = {mb / best:6.1f} MB/s  (output {size})"
    )


def main() -> None:
    doc, log, text = json_doc(60_000), server_log(60_000), prose(25_000)
    rate("outline_json", lambda t: outline_json(t, 2000), doc)
    rate("sanitize_log", lambda t: sanitize_log(t, 60), log)
    rate("compress_prose", lambda t: compress_prose(t, 0.17, ["budget"]), text)
    rate("extract_facts", extract_facts, text)
    rate("novelty", lambda t: NoveltyIndex([t]).novelty(t), text)


if __name__ == "__main__":
    main()
