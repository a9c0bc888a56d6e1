"""JSON outlines: data-driven cases, a 5,000-item API response, the cap."""

from __future__ import annotations

import json

import pytest

from ctxlayer.core.compress import outline_json
from ctxlayer.core.compress.json_outline import JsonOutline


def api_response(n: int = 5000) -> str:
    """A realistic paged API response: users with optional fields, nested objects and lists."""
    users = []
    for i in range(n):
        user = {
            "id": i + 1,
            "login": f"user{i + 1}",
            "email": None if i % 9 == 0 else f"user{i + 1}@example.com",
            "roles": ["admin", "editor", "viewer"][: i % 4],
            "profile": {
                "display_name": f"User Number {i + 1}",
                "locale": "en-GB",
                "age": 20 + i % 50,
            },
            "active": i % 3 != 0,
        }
        if i % 10 == 0:
            user["suspended_reason"] = "too many failed logins " * 10
        users.append(user)
    return json.dumps(
        {
            "data": users,
            "meta": {"total": n, "page": 1, "per_page": n},
            "links": {"next": "https://api.example.com/users?page=2"},
        }
    )


def check(text: str, expected: list[str] | None, cap: int = 2000, absent: tuple[str, ...] = ()):
    out = outline_json(text, cap)
    if expected is None:
        assert out is None
        return
    assert out is not None
    assert len(out) <= cap
    lines = out.splitlines()
    for want in expected:
        assert any(want in line for line in lines), f"{want!r} not in:\n{out}"
    for bad in absent:
        assert bad not in out, f"{bad!r} should not be in:\n{out}"


CASES = [
    ("not json", "hello world", None),
    ("bare scalar", "42", None),
    ("bare string", '"just a string"', None),
    ("truncated", '{"a": [1, 2', None),
    ("json lines are not one document", '{"a": 1}\n{"a": 2}', None),
    ("empty object", "{}", ["JSON object, 0 keys"]),
    ("empty list", "[]", ["JSON list[0]"]),
    (
        "scalars",
        '{"n": 1, "s": "x", "b": true, "z": null, "f": 1.5}',
        [
            "n: int, e.g. 1",
            's: str, e.g. "x"',
            "b: bool, e.g. true",
            "z: null",
            "f: float, e.g. 1.5",
        ],
    ),
    (
        "list counts and item shape",
        '[{"a": 1}, {"a": 2, "b": "x"}]',
        ["JSON list[2] of object", "[]: object, 1..2 keys", "a: int", "b: str (in 1/2)"],
    ),
    ("nested lists", '{"m": [[1, 2], [3]]}', ["m: list[2] of list", "[]: list[1..2] of int"]),
    ("mixed types", '{"v": [1, "a", null]}', ["v: list[3] of int|str|null"]),
    ("long scalar cut at 80", json.dumps({"s": "x" * 200}), ['s: str, e.g. "' + "x" * 80 + '"…']),
    ("prefix line accepted", 'HTTP/1.1 200 OK\n{"ok": true}', ["HTTP/1.1 200 OK", "ok: bool"]),
    ("two prefix lines rejected", 'a\nb\n{"ok": true}', None),
    ("unicode kept", '{"名前": "東京"}', ['名前: str, e.g. "東京"']),
    ("odd keys quoted", '{"a b": 1}', ['"a b": int']),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_outline_cases(text, expected):
    check(text, expected)


def test_api_response_outline():
    text = api_response()
    check(
        text,
        [
            "JSON object, 3 keys",
            "data: list[5,000] of object",
            "(64 of 5,000 items sampled)",
            "id: int, e.g. 1",
            "email: str|null",
            "roles: list[0..3] of str",
            "profile: object, 3 keys",
            "display_name: str",
            "suspended_reason: str (in 8/64)",  # every 10th user, sampled evenly
            "total: int, e.g. 5000",
            'next: str, e.g. "https://api.example.com/users?page=2"',
        ],
        absent=("user4999",),  # items are merged into a shape, never listed
    )


@pytest.mark.parametrize("cap", [60, 120, 200, 400, 800])
def test_small_caps_elide_deepest_levels_first(cap):
    out = outline_json(api_response(200), cap)
    assert out is not None and len(out) <= cap
    assert out.startswith("JSON object, 3 keys")
    if cap >= 120:
        assert "data: list[200] of object" in out
    if "display_name" not in out:
        assert "more key" in out or "item shape elided" in out


def test_wide_object_says_how_many_keys_are_left_out():
    out = outline_json(json.dumps({f"key{i}": i for i in range(5000)}), 300)
    assert out is not None and len(out) <= 300
    assert out.splitlines()[-1].strip().startswith("...") and "more keys" in out


def test_deep_nesting_does_not_recurse_forever():
    deep = "[" * 5000 + "]" * 5000
    assert outline_json(deep) is None or len(outline_json(deep)) <= 2000
    nested = "{" + '"a":{' * 200 + "}" * 201
    out = outline_json(nested, 500)
    assert out is not None and len(out) <= 500


def test_zero_cap_is_empty_for_json_none_for_text():
    assert outline_json('{"a": 1}', 0) == ""
    assert outline_json("plain", 0) is None


def test_one_outline_renders_every_size_as_a_fresh_outline_would():
    """The tool-output outline decodes and walks a document once and renders it at each size it
    tries: a render must not depend on the sizes rendered before it."""
    text = api_response(200)
    outline = JsonOutline.of(text)
    assert outline is not None and JsonOutline.of("plain text") is None
    caps = [800, 60, 4000, 120, 0, 800, 400]
    assert [outline.render(c) for c in caps] == [outline_json(text, c) for c in caps]
