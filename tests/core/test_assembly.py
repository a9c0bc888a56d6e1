"""Assembly of a session into a budget: layers, compaction, summarizer as data, cache reuse."""

from __future__ import annotations

import pytest

from ctxlayer.core.assembly import Compaction, CompactionPolicy, History, assemble, measure
from ctxlayer.core.assembly.assemble import AssemblyInput
from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import CountCache, WordTokenizer, message_tokens
from ctxlayer.core.zones import DEFAULT_MODES, Rule, new_item
from ctxlayer.protocol import Message

COUNTER = CountCache(WordTokenizer())
FILLER = ("We looked at the options and talked about them for a while without deciding "
          "anything in particular so this sentence is only here to take up room. ")

RULES = [Rule(id=f"r{k}", text=f"Never break invariant number {k} of the ledger.",
              weight=10 - k % 3, seq=k) for k in range(12)]
CONSTRAINTS = [
    "You must keep the public API of payments/api.py unchanged.",
    "Never add a dependency outside the standard library.",
    "Only touch files under src/billing/ in this task.",
]


def chat(n: int, *, planted: dict[int, str] | None = None) -> History:
    history = History()
    for k in range(n):
        role = "user" if k % 2 == 0 else "assistant"
        text = FILLER * 3
        if planted and k in planted:
            text = planted[k] + " " + text
        msg = Message(role=role, content=text, id=f"m{k}")
        history.append(msg, k, message_tokens(msg, COUNTER))
    return history


def inp(budget: int, **kw) -> AssemblyInput:
    base = dict(budget=budget, mode="deep", mode_spec=DEFAULT_MODES["deep"],
                system=[Message(role="system", content="You are a helpful assistant.",
                                id="ctx:core", pinned=True)])
    base.update(kw)
    return AssemblyInput(**base)


def check_fits(out, budget):
    assert out.result is not None
    assert out.result.tokens.total <= budget
    recount = 3 + sum(message_tokens(m, COUNTER) for m in out.result.messages)
    assert recount == out.result.tokens.total


def test_layers_in_order_and_everything_kept_when_it_fits():
    history = chat(6)
    items = [new_item("i1", "note", "The flaky test is tests/test_sync.py::test_retry.")]
    out = assemble(history, Compaction(), inp(5000, rules=RULES[:3], items=items), COUNTER)
    check_fits(out, 5000)
    ids = [m.id for m in out.result.messages]
    assert ids == ["ctx:core", "ctx:rules", "ctx:working", "m0", "m1", "m2", "m3", "m4", "m5"]
    assert out.result.cache_boundary == 2  # system + rules are the stable prefix
    assert not out.result.compacted and out.compaction is None
    assert "__RULE__" in out.result.messages[1].content
    assert "tests/test_sync.py::test_retry" in out.result.messages[2].content


def test_system_alone_over_budget_is_an_error():
    with pytest.raises(ContextError) as err:
        assemble(chat(2), Compaction(), inp(5), COUNTER)
    assert err.value.kind == "pinned_over_budget"


def test_compaction_keeps_every_rule_and_every_hard_constraint():
    planted = {2 * k: c for k, c in enumerate(CONSTRAINTS)}
    history = chat(80, planted=planted)
    budget = 3000
    out = assemble(history, Compaction(), inp(budget, rules=RULES), COUNTER)
    check_fits(out, budget)
    assert out.result.compacted
    text = "\n".join(m.content for m in out.result.messages)
    for rule in RULES:
        assert rule.text in text
    for constraint in CONSTRAINTS:
        assert constraint in text
    summary = next(m for m in out.result.messages if m.kind == "summary")
    assert summary.id.startswith("ctx:summary:")
    assert [m.id for m in out.result.messages[-6:]] == [f"m{k}" for k in range(74, 80)]
    assert out.compaction.replaced == 74
    summarized = [e for e in out.audit if e.action == "summarized"]
    assert len(summarized) == 74 and summarized[0].message_id == "m0"


def test_facts_of_replaced_messages_survive_in_the_ledger():
    planted = {10: "The crash is in src/core/loader.py:218 with error E4012.",
               11: "Run `pytest tests/test_loader.py -k cache` to reproduce it."}
    history = chat(60, planted=planted)
    out = assemble(history, Compaction(), inp(2500), COUNTER)
    summary = next(m for m in out.result.messages if m.kind == "summary").content
    for fact in ("src/core/loader.py", "218", "E4012", "pytest tests/test_loader.py -k cache"):
        assert fact in summary


def test_a_second_compaction_adds_the_facts_of_what_it_replaces():
    history = chat(60, planted={10: "First failure at src/core/loader.py:218 (E4012)."})
    first = assemble(history, Compaction(), inp(2500), COUNTER)
    for k in range(60, 120):
        text = FILLER * 3
        if k == 70:
            text = "Second failure: src/net/socket.py:99 raised E7777. " + text
        msg = Message(role="user" if k % 2 == 0 else "assistant", content=text, id=f"m{k}")
        history.append(msg, k, message_tokens(msg, COUNTER))
    second = assemble(history, first.compaction, inp(2500), COUNTER)
    assert second.compaction is not None and second.compaction.upto_seq > 70
    summary = next(m for m in second.result.messages if m.kind == "summary").content
    for fact in ("src/core/loader.py", "E4012", "src/net/socket.py", "E7777"):
        assert fact in summary


def test_summarizer_is_data_needs_summary_then_accepts_text():
    history = chat(60)
    first = assemble(history, Compaction(), inp(2500, client_summarizer=True), COUNTER)
    assert first.result is None and first.compaction is None
    request = first.needs_summary
    assert [m.id for m in request.messages] == [f"m{k}" for k in range(54)]
    assert "Hard constraints" in request.instructions and request.max_tokens > 0
    second = assemble(history, Compaction(), inp(2500, client_summarizer=True,
                                                  summary_text="Decided: nothing useful."),
                      COUNTER)
    summary = next(m for m in second.result.messages if m.kind == "summary")
    assert "Decided: nothing useful." in summary.content
    offline = assemble(history, Compaction(), inp(2500, client_summarizer=True, offline=True),
                       COUNTER)
    assert offline.result is not None and offline.result.compacted


def test_compaction_is_sticky_and_incremental():
    history = chat(60)
    out = assemble(history, Compaction(), inp(2500), COUNTER)
    state = out.compaction
    again = assemble(history, state, inp(2500, previous=out.fingerprint), COUNTER)
    assert again.compaction is None and not again.result.compacted  # nothing to redo
    # every message is identical: all but the reply priming is reusable
    assert again.result.cache_reuse_tokens == again.result.tokens.total - 3
    for k in range(60, 62):  # a new turn: only the tail changes
        msg = Message(role="user" if k % 2 == 0 else "assistant", content="short reply",
                      id=f"m{k}")
        history.append(msg, k, message_tokens(msg, COUNTER))
    third = assemble(history, state, inp(2500, previous=again.fingerprint), COUNTER)
    assert third.result.cache_reuse_tokens == again.result.tokens.total - 3
    assert third.result.tokens.total > again.result.tokens.total


def test_next_compaction_point_and_budget_measure():
    history = chat(10)
    budget = measure(history, Compaction(), inp(100_000), COUNTER, model="m", session_id="s",
                     error_band=None)
    assert budget.used == 3 + message_tokens(Message(role="system", content="You are a "
                                                     "helpful assistant."), COUNTER) + \
        history.total
    assert budget.by_layer.history == history.total
    assert budget.used < budget.next_compaction_at < budget.limit


def test_working_items_beyond_the_mode_share_are_reported_not_deleted():
    items = [new_item(f"i{k}", "doc", ("lorem ipsum " * 400) + f"item{k}", seq=k)
             for k in range(5)]
    out = assemble(chat(2), Compaction(), inp(50_000, mode="short",
                                               mode_spec=DEFAULT_MODES["short"], items=items),
                   COUNTER)
    dropped = [e for e in out.result.dropped if "working zone" in e.reason]
    assert dropped and all(e.message_id.startswith("i") for e in dropped)
    assert out.result.tokens.working <= 1000


def test_cheap_stages_run_before_the_summarizer():
    history = History()
    for k in range(30):
        role = ["user", "assistant", "tool"][k % 3]
        content = f"line of tool output with value {k}\n" * 200 if role == "tool" else \
            f"short message about the build number {k}"
        kw = {"tool_call_id": f"c{k}"} if role == "tool" else {}
        msg = Message(role=role, content=content, id=f"m{k}", **kw)
        history.append(msg, k, message_tokens(msg, COUNTER))
    policy = CompactionPolicy(tool_output_cap=100, keep_recent=4)
    total = history.total
    out = assemble(history, Compaction(), inp(int(total * 1.2), policy=policy), COUNTER)
    assert out.result.compacted
    assert any(e.action == "compressed" and "tool output" in e.reason for e in out.audit)
    assert not any(e.action == "summarized" for e in out.audit)
    assert out.compaction.replaced == 0 and out.compaction.rewrites


def test_mode_suggestion_comes_with_the_assembly():
    history = History()
    msg = Message(role="user", content="I get a stack trace when I save", id="u")
    history.append(msg, 0, message_tokens(msg, COUNTER))
    out = assemble(history, Compaction(), inp(5000), COUNTER)
    assert out.result.mode_suggestion.mode == "debug"


def test_a_summary_over_the_history_share_is_fitted_never_over_the_budget():
    planted = {k: f"Step {k} failed in src/mod_{k}/handler_{k}.py:{100 + k} with E{5000 + k}."
               for k in range(0, 80, 2)}
    planted[80] = CONSTRAINTS[0]  # a user message
    history = chat(90, planted=planted)
    for budget in (50, 70):
        out = assemble(history, Compaction(), inp(budget), COUNTER)
        check_fits(out, budget)
        summary = next(m for m in out.result.messages if m.kind == "summary").content
        assert CONSTRAINTS[0] in summary  # hard constraints are never what gives way
        assert any(e.action == "truncated" and e.message_id.startswith("ctx:summary")
                   for e in out.result.truncated)


def test_hard_constraints_alone_over_the_share_are_an_error_not_an_overflow():
    planted = {2 * k: f"You must keep invariant {k} of the module unchanged whatever happens."
               for k in range(40)}
    with pytest.raises(ContextError) as err:
        assemble(chat(90, planted=planted), Compaction(), inp(300), COUNTER)
    assert err.value.kind == "pinned_over_budget" and "hard constraints" in str(err.value)
