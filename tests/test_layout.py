"""The test tree imports test modules by their file name (no packages): two test files with
the same name in different folders would make the whole run fail to collect."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def test_no_two_test_modules_share_a_name():
    here = Path(__file__).parent
    names = Counter(p.name for p in here.rglob("*.py")
                    if p.name != "conftest.py" and "node_modules" not in p.parts)
    assert [n for n, c in names.items() if c > 1] == []
