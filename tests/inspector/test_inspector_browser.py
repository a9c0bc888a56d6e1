"""The inspector page in headless Chromium: the slider shows the engine's verdicts at the
nearest budget the daemon ran it at (never a verdict of its own), and it loads nothing."""

from __future__ import annotations

import pytest

from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.inspector import inspect_conversation, render_inspector

WORD = {"k": "kept", "s": "shortened", "d": "dropped"}


@pytest.fixture
def chat_data(big_chat):
    return inspect_conversation(big_chat, 32_000, CountCache(WordTokenizer()),
                                model="test", window=128_000)


def open_page(chromium, data, tmp_path):
    path = tmp_path / "inspector.html"
    path.write_text(render_inspector(data), encoding="utf-8")
    context = chromium.new_context()
    pg = context.new_page()
    requests, errors = [], []
    pg.on("request", lambda r: requests.append(r.url))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(path.as_uri())
    pg.wait_for_selector("li.msg[data-would]")
    return context, pg, requests, errors


@pytest.fixture
def page(chromium, chat_data, tmp_path):
    context, pg, requests, errors = open_page(chromium, chat_data, tmp_path)
    yield pg
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    context.close()


def marks(pg) -> list[str]:
    return pg.eval_on_selector_all("li.msg", "els => els.map(e => e.dataset.would)")


def set_budget(pg, value: int) -> None:
    pg.eval_on_selector(
        "#budget-slider",
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }",
        value,
    )


def test_at_the_budget_the_slider_says_what_the_table_says(page, chat_data):
    table = [{"truncated": "shortened"}.get(m.state, m.state) for m in chat_data.messages]
    assert marks(page) == table
    assert "shortened" in table  # the outlined tool results are shown kept, shortened
    states = page.eval_on_selector_all(
        'li.msg[data-state="truncated"]', "els => els.map(e => e.dataset.would)")
    assert states and set(states) == {"shortened"}


def test_every_step_shows_the_engines_verdicts(page, chat_data):
    for step in chat_data.steps:
        set_budget(page, step.budget)
        if step.error:
            assert "cannot fit" in page.inner_text("#slider-summary")
            continue
        assert marks(page) == [WORD[c] for c in step.verdicts], step.budget
        assert f"At {step.budget:,} tokens" in page.inner_text("#slider-summary")


def test_between_steps_the_nearest_step_is_shown(page, chat_data):
    steps = [s for s in chat_data.steps if not s.error]
    a, b = steps[1], steps[2]
    set_budget(page, a.budget + (b.budget - a.budget) // 4)
    assert page.eval_on_selector("#budget-slider", "el => Number(el.value)") == a.budget
    assert marks(page) == [WORD[c] for c in a.verdicts]
    page.click("#reset")
    assert page.inner_text("#budget-value") == f"{chat_data.budget:,}"


def test_budget_marker_moves_with_the_slider(page, chat_data):
    before = page.eval_on_selector("#budget-marker", "el => el.style.left")
    set_budget(page, chat_data.window)
    after = page.eval_on_selector("#budget-marker", "el => el.style.left")
    assert before != after and after.startswith("100")


def test_a_page_with_one_step_keeps_the_slider_still(chromium, sample_data, tmp_path):
    context, pg, requests, errors = open_page(chromium, sample_data, tmp_path)
    assert pg.is_disabled("#budget-slider")
    assert marks(pg) == [m.state for m in sample_data.messages]
    assert errors == [] and all(u.startswith(("file:", "data:")) for u in requests)
    context.close()
