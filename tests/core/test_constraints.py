"""Hard constraints: what the user marks, and a precise detector of the user's imperatives."""

from __future__ import annotations

import pytest

from ctxlayer.core.assembly import constraints as hc
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.protocol import Message

COUNTER = CountCache(WordTokenizer())

ORDERS = [
    "Target Python 3.9.",
    "Never add a dependency outside the standard library.",
    "You must keep the public API of payments/api.py unchanged.",
    "Only touch files under src/billing/ in this task.",
    "Do not change the tests.",
    "Don't touch the CI config.",
    "Please always run ruff before committing.",
    "Also, only use the standard library.",
    "The public API must stay unchanged.",
    "Network access is not allowed.",
    "I want you to keep the old behaviour.",
    "Make sure the migration is reversible.",
    "Stick to the existing naming scheme.",
    "Keep the function signatures as they are.",
    "- Avoid interactive tools like vi or nano.",
    "必须使用 Python 3.9",
    # an order after a semicolon or a comma, the task before it
    "Migrate the billing service to Postgres; never drop the invoices table.",
    "Refactor the parser, do not touch the public API.",
    "Update the docs, and never commit to main.",
    "I migrated the schema; don't change the invoices table.",
    "Fix it, never pass None to it.",
    "Be careful, never push to main.",
]
NOT_ORDERS = [
    "I don't understand why test_3 fails",
    "I don't understand why test_3 fails.",
    "Why does it never pass?",
    "It never passes on CI.",
    "I must admit this is confusing.",
    "Can you only show me the diff?",
    "Do you always do that",
    "The test keeps failing.",
    "I don't know what you mean.",
    "We looked at it and it only fails sometimes.",
    "How do I make sure it works?",
    "This only happens on Windows.",
    "我不要这个",
    "Should we keep it?",
    # what the user says of themselves or of the past, after a comma: prose
    "I never said that.",
    "It fails, never mind.",
    "I tried it, don't know why it fails.",
    "It ran once, never worked again.",
    "Yes, never seen that before.",
    "Ok, don't worry about it.",
    "Why, never drop it?",
    # the code or the user described after a comma, not told (they were kept as the user's
    # hard constraints, verbatim, in every summary)
    "The function returns None, never raises.",
    "It's flaky, never reproduces locally.",
    "The job runs nightly, never during business hours.",
    "Users log in with SSO, never with passwords.",
    "Sorry, don't have time to look at the logs today.",
    "Honestly, don't like this approach much.",
    "The cache is cleared on restart, never on reload.",
    "This endpoint is slow, never returns in under 2 seconds.",
    "The old service, never deployed to prod, still has a cron job.",
    "Our users, never patient, complain when builds take long.",
]


@pytest.mark.parametrize("sentence", ORDERS)
def test_orders_are_detected(sentence):
    assert hc.is_order(hc.sentences(sentence)[0])


@pytest.mark.parametrize("sentence", NOT_ORDERS)
def test_questions_and_statements_are_not(sentence):
    assert not hc.is_order(sentence)


def test_only_user_messages_count_and_duplicates_merge():
    msgs = [Message(role="assistant", content="Never do this, I must say."),
            Message(role="user", content="Never log card numbers. Why is it slow?"),
            Message(role="user", content="never   log card numbers."),
            Message(role="tool", content="Do not edit generated files.", tool_call_id="c")]
    found, marked = hc.detect(msgs)
    assert found == ["Never log card numbers."] and marked == []


def test_a_pinned_or_rule_kind_user_message_is_marked_whole():
    msgs = [Message(role="user", content="Budget: 300 euros,\nno more.", pinned=True),
            Message(role="user", content="Use tabs everywhere", kind="rule"),
            Message(role="assistant", content="Noted", pinned=True)]
    found, marked = hc.detect(msgs)
    assert found == marked == ["Budget: 300 euros, no more.", "Use tabs everywhere"]


def test_split_keeps_marked_then_newest_within_the_cap():
    constraints = [f"Never break rule {k} of the module." for k in range(6)]  # 7 words each
    kept, demoted = hc.split(constraints, [constraints[0]], 3 * 9, COUNTER)
    assert kept == [constraints[0], constraints[4], constraints[5]]
    assert demoted == constraints[1:4]
    assert hc.split(constraints, [], 0, COUNTER) == ([], constraints)
