"""Documents and files the gateway cannot see (sent by a Files API id or a URL): each costed at
one page, its label saying the cost is guessed, and a request over its budget only by those
guesses prepared and sent with a notice saying so, never refused (13 invoices by file_id and a
question to a 200k Claude were refused: "the newest user message alone needs 195012 tokens,
over the budget of 191808", though the provider took them)."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, media
from ctxlayer.core.guessed import guessed
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer

WORDS = WordTokenizer()
PAGE = media.PDF_PAGE_TOKENS


def anthropic(parts: list[dict]) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "messages": [{"role": "user", "content": [
                *parts, {"type": "text", "text": "Total these invoices."}]}]}


def by_file_id(n: int) -> list[dict]:
    return [{"type": "document", "title": f"invoice {k}",
             "source": {"type": "file", "file_id": f"file_{k}"}} for k in range(n)]


UNSEEN = {
    "anthropic file_id": ("anthropic", anthropic(by_file_id(1)), "document", "by file_id"),
    "anthropic URL": ("anthropic", anthropic([{"type": "document", "source": {
        "type": "url", "url": "https://example.com/a.pdf"}}]), "document", "by URL"),
    "chat file_id": ("openai", {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"file_id": "file-1"}}, {"type": "text", "text": "x"}]}]},
        "file", "by file_id"),
    "responses file_id": ("responses", {"model": "gpt-4o", "input": [{"role": "user", "content": [
        {"type": "input_file", "file_id": "file-1"}, {"type": "input_text", "text": "x"}]}]},
        "file", "by file_id"),
    "responses URL": ("responses", {"model": "gpt-4o", "input": [{"role": "user", "content": [
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_text", "text": "x"}]}]}, "file", "by URL"),
}


@pytest.mark.parametrize("case", UNSEEN)
def test_an_unseen_document_costs_one_page_and_says_it_was_guessed(case):
    fmt, body, kind, how = UNSEEN[case]
    question = decode(fmt, body, WORDS).messages[-1]
    assert question.parts_tokens == PAGE
    assert question.parts and question.parts[0].startswith(kind)
    assert question.parts[0].endswith(f"{how}, unseen ({PAGE} tokens)")
    assert guessed([question]).tokens == PAGE


def test_a_document_sent_with_its_data_is_not_a_guess():
    inline = [{"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                              "data": "four words of text"}}]
    question = decode("anthropic", anthropic(inline), WORDS).messages[-1]
    assert guessed([question]).tokens == 0


def test_a_question_over_the_budget_only_by_unseen_documents_is_sent_saying_so():
    msgs = decode("anthropic", anthropic(by_file_id(13)), WORDS).messages
    budget = 12 * PAGE  # under the guesses, over what the text costs
    turn = prepare_turn(None, msgs, budget, WORDS)
    assert turn.messages[-1].parts_tokens == 13 * PAGE and turn.tokens > budget
    assert turn.notice and f"over the budget of {budget}" in turn.notice
    assert f"13 documents by file_id counted at {PAGE} tokens each, unseen" in turn.notice


def test_a_request_over_the_budget_by_what_it_shows_is_still_refused():
    """The guesses give room for themselves only: a system prompt over the budget is the
    refusal it was, naming the budget asked."""
    body = {**anthropic(by_file_id(2)), "system": "rule " * 5000}
    msgs = decode("anthropic", body, WORDS).messages
    with pytest.raises(ContextError) as refused:
        prepare_turn(None, msgs, 4000, WORDS)
    assert refused.value.kind == "pinned_over_budget"
    assert "over the budget of 4000" in str(refused.value)


def follow_up(docs: int, answer: str) -> list:
    body = anthropic(by_file_id(docs))
    body["messages"] += [{"role": "assistant", "content": answer},
                         {"role": "user", "content": "And without tax?"}]
    return decode("anthropic", body, WORDS).messages


def test_a_follow_up_to_documents_over_the_budget_only_by_their_guesses_keeps_them():
    """The turn after 13 unseen invoices over the budget only by their guesses: before, the
    invoices were summarized away though the provider would have taken them."""
    budget = 12 * PAGE
    first = prepare_turn(None, decode("anthropic", anthropic(by_file_id(13)), WORDS).messages,
                         budget, WORDS)
    turn = prepare_turn(first.state, follow_up(13, "The total is 1234."), budget, WORDS)
    assert not turn.dropped and turn.messages[0].parts_tokens == 13 * PAGE
    assert turn.notice and "13 documents by file_id counted at" in turn.notice


def test_a_history_over_the_budget_by_what_it_shows_is_fitted_as_any_other():
    msgs = follow_up(2, "total " * 10000)  # a long answer: seen, over the budget alone
    turn = prepare_turn(None, msgs, 3 * PAGE, WORDS)
    assert turn.tokens <= 3 * PAGE and (turn.dropped or turn.truncated)
    assert not (turn.notice or "").startswith("ctxlayer: over the budget")
