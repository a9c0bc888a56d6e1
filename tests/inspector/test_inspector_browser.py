"""The inspector page in headless Chromium: the slider and the class order change what is
marked dropped, the page's script agrees with `would_drop`, and it loads nothing."""

from __future__ import annotations

import pytest

from ctxlayer.inspector import render_inspector, would_drop


@pytest.fixture
def page(chromium, sample_data, tmp_path):
    path = tmp_path / "inspector.html"
    path.write_text(render_inspector(sample_data), encoding="utf-8")
    context = chromium.new_context()
    pg = context.new_page()
    requests, errors = [], []
    pg.on("request", lambda r: requests.append(r.url))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(path.as_uri())
    pg.wait_for_selector("li.msg[data-would]")
    yield pg
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    context.close()


def marked_dropped(pg) -> set[int]:
    return set(pg.eval_on_selector_all(
        'li.msg[data-would="dropped"]', "els => els.map(e => Number(e.dataset.index))"))


def set_budget(pg, value: int) -> None:
    pg.eval_on_selector(
        "#budget-slider",
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }",
        value,
    )


def test_slider_changes_what_is_marked_dropped(page, sample_data):
    at_budget = marked_dropped(page)
    assert at_budget == would_drop(sample_data.messages, 700)
    set_budget(page, 400)
    smaller = marked_dropped(page)
    assert smaller > at_budget
    assert "At 400 tokens" in page.inner_text("#slider-summary")
    set_budget(page, 2000)
    assert marked_dropped(page) == set()
    # the system message is never marked, however small the budget
    set_budget(page, 0)
    system_rows = page.eval_on_selector_all(
        'li.msg[data-class="0"]', "els => els.map(e => e.dataset.would)")
    assert system_rows == ["kept"]


def test_script_agrees_with_python_at_every_budget(page, sample_data):
    for budget in range(100, 1500, 37):
        set_budget(page, budget)
        assert marked_dropped(page) == would_drop(sample_data.messages, budget), budget


def test_reordering_priority_classes_changes_the_drop(page, sample_data):
    index = {m.id: m.index for m in sample_data.messages}
    assert index["doc"] not in marked_dropped(page)  # the pipeline keeps the newest document
    # history before recent messages: one click on P1's "down" button switches to class order
    page.click('#priority-order li[data-class="1"] button.down')
    order = page.eval_on_selector_all("#priority-order li", "els => els.map(e => e.dataset.class)")
    assert order == ["2", "1", "3"]
    assert page.is_checked("#fill-by-class")
    assert marked_dropped(page) == would_drop(sample_data.messages, 700, order=(2, 1, 3))
    assert index["doc"] in marked_dropped(page) and index["m0"] not in marked_dropped(page)
    page.check("#fill-newest")
    assert marked_dropped(page) == would_drop(sample_data.messages, 700)
    page.check("#fill-by-class")
    page.click("#reset")
    assert page.is_checked("#fill-newest")
    assert index["doc"] not in marked_dropped(page)


def test_script_agrees_with_python_by_class(page, sample_data):
    page.click('#priority-order li[data-class="3"] button.up')
    for budget in range(150, 1400, 53):
        set_budget(page, budget)
        assert marked_dropped(page) == would_drop(sample_data.messages, budget, order=(1, 3, 2))


def test_budget_marker_moves_with_the_slider(page):
    before = page.eval_on_selector("#budget-marker", "el => el.style.left")
    set_budget(page, 1800)
    after = page.eval_on_selector("#budget-marker", "el => el.style.left")
    assert before != after and after.startswith("90")
