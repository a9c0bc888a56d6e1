"""Documents and files the gateway cannot see (by a Files API id) go through it: each is
costed at one page and a request over its budget only by those guesses is sent, the provider
deciding, with a notice saying what was guessed. Before, each was 15,000 tokens and the
gateway refused what the provider took: 13 invoices by file_id and a question to
claude-sonnet-4-5 ("the newest user message alone needs 195012 tokens, over the budget of
191808"), 8 Chat `file` parts to gpt-4o-mini (pinned_over_budget)."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_stack import Stack, fresh_stack

PAGE = 3000  # media.PDF_PAGE_TOKENS: what an unseen document is counted at


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    with fresh_stack(tmp_path_factory.mktemp("unseen")) as s:
        yield s


def invoices(stack: Stack, n: int, conversation: str) -> tuple[Any, dict, list[str]]:
    """``n`` invoices by file_id and a question to claude-sonnet-4-5: the raw answer, the body
    the provider received, and the notices the turn's budget events said."""
    notices: list[str] = []
    stack.state.events.budget_listeners.append(
        lambda _ws, budget, _caller: notices.append(budget.notice)
        if budget.conversation_id == conversation and budget.notice else None)
    docs = [{"type": "document", "title": f"invoice {k}",
             "source": {"type": "file", "file_id": f"file_011doc{k}"}} for k in range(n)]
    raw = stack.anthropic().messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=8192,
        messages=[{"role": "user", "content": [*docs, {"type": "text",
                                                       "text": "Total these invoices."}]}],
        extra_headers={"x-ctxlayer-conversation": conversation})
    return raw, stack.model_requests()[-1]["body"], notices


def test_a_few_documents_by_file_id_under_the_window_go_whole(stack):
    raw, sent, _ = invoices(stack, 13, "thirteen")
    assert raw.parse().content
    assert len(sent["messages"][0]["content"]) == 14
    assert int(raw.headers["x-ctxlayer-tokens"]) >= 13 * PAGE


def test_documents_over_the_budget_only_by_their_guessed_cost_are_sent_saying_so(stack):
    """70 unseen documents are 210,000 tokens by the guess, over the budget of a 200k window:
    sent all the same, whole, the notice saying what was guessed."""
    raw, sent, notices = invoices(stack, 70, "seventy")
    assert raw.parse().content
    assert len(sent["messages"][0]["content"]) == 71
    assert int(raw.headers["x-ctxlayer-tokens"]) >= 70 * PAGE
    assert any(f"70 documents by file_id counted at {PAGE} tokens each, unseen" in n
               for n in notices), notices


def test_chat_file_parts_by_file_id_go_through(stack):
    client = stack.openai()
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", max_completion_tokens=16000, messages=[{"role": "user", "content": [
            *({"type": "file", "file": {"file_id": f"file-{k}"}} for k in range(8)),
            {"type": "text", "text": "compare"}]}])
    assert raw.parse().choices
    assert len(stack.model_requests()[-1]["body"]["messages"][0]["content"]) == 9


def test_a_follow_up_to_documents_over_the_budget_only_by_their_guesses_keeps_them(stack):
    """Before, the turn after 70 unseen invoices summarized them away (53 tokens sent)."""
    invoices(stack, 70, "follow-up")
    first = stack.model_requests()[-1]["body"]["messages"]
    raw = stack.anthropic().messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=8192,
        messages=[*first, {"role": "assistant", "content": "The total is 1234."},
                  {"role": "user", "content": "And without tax?"}],
        extra_headers={"x-ctxlayer-conversation": "follow-up"})
    assert raw.parse().content and raw.headers["x-ctxlayer-dropped"] == "0"
    sent = stack.model_requests()[-1]["body"]["messages"]
    assert len(sent) == 3 and len(sent[0]["content"]) == 71


def test_images_by_url_over_the_budget_only_by_their_guessed_cost_are_sent_saying_so(stack):
    """125 screenshots by URL are 200,000 tokens by the guess (1,600 each for Claude), over the
    budget of a 200k window: the gateway refused them (pinned_over_budget) though the provider
    reads them; now they are sent whole, the notice saying what was guessed."""
    notices: list[str] = []
    stack.state.events.budget_listeners.append(
        lambda _ws, budget, _caller: notices.append(budget.notice)
        if budget.conversation_id == "screens" and budget.notice else None)
    images = [{"type": "image", "source": {"type": "url", "url": f"https://example.com/{k}.png"}}
              for k in range(125)]
    raw = stack.anthropic().messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=8192,
        messages=[{"role": "user", "content": [*images, {"type": "text", "text": "What changed?"}]}],
        extra_headers={"x-ctxlayer-conversation": "screens"})
    assert raw.parse().content
    assert len(stack.model_requests()[-1]["body"]["messages"][0]["content"]) == 126
    assert any("125 images by URL counted at 1600 tokens each, unseen" in n for n in notices), \
        notices
