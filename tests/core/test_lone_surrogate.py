"""core.errors.lone_surrogate: the one line every face says of JSON cut inside a character."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import lone_surrogate


@pytest.mark.parametrize("data,says", [
    (rb'["a\ud800"]', r"a lone UTF-16 surrogate \ud800 at byte 3"),
    (rb'["\uDC00"]', r"a lone UTF-16 surrogate \udc00 at byte 2"),
    (rb'["\ud83d\ude00 then \ud83d"]', r"a lone UTF-16 surrogate \ud83d at byte 20"),
    (rb'["\\\ud800"]', r"a lone UTF-16 surrogate \ud800 at byte 4"),  # an escaped \ first
    (rb'["\ud83d\ude00"]', None),  # a whole pair
    (rb'["\\ud800"]', None),  # an escaped backslash, then the letters
    (b"{not json", None),
])
def test_a_lone_surrogate_escape_is_named_with_its_byte(data, says):
    found = lone_surrogate(data)
    assert found == says if says is None else found.startswith(says + ": the text was cut")
