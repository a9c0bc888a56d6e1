"""Zones A and B and the modes and the mode suggestion, data-driven."""

from __future__ import annotations

import pytest

from ctxlayer.core.zones import (
    DEFAULT_MODES,
    DecayPolicy,
    Rule,
    RulePolicy,
    decay_turn,
    imperative_warning,
    new_item,
    place_rules,
    render_rules,
    suggest_mode,
    zone_limits,
)
from ctxlayer.core.zones.references import is_referenced, reference_keys
from ctxlayer.core.zones.working import after_message, turn_so_far
from ctxlayer.protocol import Message, ToolCall


def short(text: str) -> str:
    """An injected compressor: the first eight characters (decay tests check states, not text)."""
    return text[:8]


# --- zone A ------------------------------------------------------------------------------------


def test_rules_are_ordered_by_weight_then_age_and_capped_with_demotion():
    rules = [Rule(id=f"r{k}", text=f"Never do thing {k}", weight=w, seq=k)
             for k, w in enumerate([1, 3, 2, 3, 1])]
    placement = place_rules(rules, RulePolicy(max_rules=3))
    assert [r.id for r in placement.active] == ["r1", "r3", "r2"]
    assert [r.id for r in placement.demoted] == ["r0", "r4"]


def test_default_cap_is_twelve():
    rules = [Rule(id=f"r{k}", text="Always x", weight=k, seq=k) for k in range(15)]
    placement = place_rules(rules)
    assert len(placement.active) == 12
    assert {r.id for r in placement.demoted} == {"r0", "r1", "r2"}


def test_only_top_weight_rules_carry_the_prefix():
    text = render_rules([Rule(id="a", text="Never use `any`.", weight=5),
                         Rule(id="b", text="Reply  in\nEnglish.", weight=5),
                         Rule(id="c", text="Prefer small functions.", weight=1)])
    lines = text.splitlines()[1:]
    assert lines == ["- __RULE__ Never use `any`.", "- __RULE__ Reply in English.",
                     "- Prefer small functions."]


@pytest.mark.parametrize("text, warns", [
    ("Never use `any`.", False),
    ("Always run `make test` before committing.", False),
    ("Do not touch the service layer.", False),
    ("禁止在代码中使用 any 类型", False),
    ("The project usually avoids `any`.", True),
    ("We generally prefer tabs.", True),
    ("Code is typically formatted with black.", True),
    ("项目中通常不会使用 any 类型", True),
])
def test_descriptive_rules_get_the_imperative_warning(text, warns):
    warning = imperative_warning(text)
    assert (warning is not None) == warns
    if warns:
        assert "imperative" in warning


# --- references --------------------------------------------------------------------------------


@pytest.mark.parametrize("item, reply, referenced", [
    ("KeyError in src/app/models.py line 42", "Let me open src/app/models.py again.", True),
    ("def load_user_profile(user_id: int) -> Profile", "I changed load_user_profile.", True),
    ("The retry loop backs off exponentially after timeouts",
     "Yes, the retry loop backs off like that.", True),
    ("error E1043 from the payment gateway", "That E1043 comes from the gateway.", True),
    ("KeyError in src/app/models.py line 42", "ok", False),
    ("def load_user_profile(user_id: int) -> Profile", "Done. Anything else?", False),
])
def test_reference_detection(item, reply, referenced):
    assert is_referenced(reference_keys(item), reply) is referenced


# --- decay, step by step -----------------------------------------------------------------------

# Each row: the replies of consecutive turns ("" = a reply that refers to nothing, "REF" = one
# that mentions the item's path), and the item's expected state after each turn.
DECAY_CASES = {
    "cools, compresses after 4 turns, removed after 7": (
        True, ["", "", "", "", "", "", ""],
        [(0.7, "full"), (0.49, "full"), (0.343, "full"), (0.2401, "compressed"),
         (0.16807, "compressed"), (0.117649, "compressed"), (None, "removed")],
    ),
    "a reference resets heat to 1.0 and restores the full text": (
        True, ["", "", "", "", "REF", ""],
        [(0.7, "full"), (0.49, "full"), (0.343, "full"), (0.2401, "compressed"),
         (1.0, "full"), (0.7, "full")],
    ),
    "required items are compressed but never removed": (
        False, ["", "", "", "", "", "", "", "", ""],
        [(0.7, "full"), (0.49, "full"), (0.343, "full"), (0.2401, "compressed"),
         (0.16807, "compressed"), (0.117649, "compressed"), (0.0823543, "compressed"),
         (0.05764801, "compressed"), (0.040353607, "compressed")],
    ),
}


@pytest.mark.parametrize("case", list(DECAY_CASES))
def test_decay_step_by_step(case):
    optional, replies, expected = DECAY_CASES[case]
    content = "Traceback: KeyError 'user' raised in src/app/models.py at line 42 of the loader."
    items = [new_item("it", "log", content, optional=optional)]
    for turn, (reply, (heat, state)) in enumerate(zip(replies, expected, strict=True), 1):
        text = "I looked at src/app/models.py again." if reply == "REF" else reply
        items, events = decay_turn(items, text, short, DecayPolicy())
        if state == "removed":
            assert items == [], f"turn {turn}"
            assert [e.action for e in events] == ["removed"]
            continue
        (item,) = items
        assert item.heat == pytest.approx(heat), f"turn {turn}"
        assert (item.compressed is not None) == (state == "compressed"), f"turn {turn}"
        assert item.shown == (short(content) if state == "compressed" else content)


@pytest.mark.parametrize("case", list(DECAY_CASES))
def test_a_plain_chat_cools_once_a_turn_at_the_assistants_answer(case):
    """The same cases as a session reads them: a user message, then the assistant's answer."""
    optional, replies, expected = DECAY_CASES[case]
    content = "Traceback: KeyError 'user' raised in src/app/models.py at line 42 of the loader."
    items, turn = [new_item("it", "log", content, optional=optional)], []
    for reply, (heat, state) in zip(replies, expected, strict=True):
        for msg in (Message(role="user", content="go on"), Message(
                role="assistant", content="I looked at src/app/models.py." if reply else "")):
            items, turn, _ = after_message(items, turn, msg, short, DecayPolicy())
        assert (items == []) == (state == "removed")
        assert not items or items[0].heat == pytest.approx(heat)


def agent_turn(steps: int, answer: str | None = "Here is the plan.") -> list[Message]:
    """One user request answered in ``steps`` tool-calling steps (and an answer, unless None)."""
    out = [Message(role="user", content="Implement the CSV export following the ticket.")]
    for k in range(steps):
        out += [Message(role="assistant", content="", tool_calls=[ToolCall(
                    id=f"c{k}", name="read_file", arguments=f'{{"path": "src/part{k}.py"}}')]),
                Message(role="tool", content=f"def part{k}(): pass", tool_call_id=f"c{k}")]
    return out + ([Message(role="assistant", content=answer)] if answer is not None else [])


def replay(items: list, messages: list[Message], turn: list[str] | None = None):
    turn, events = list(turn or ()), []
    for msg in messages:
        items, turn, done = after_message(items, turn, msg, short, DecayPolicy())
        events += done
    return items, turn, events


def test_one_request_answered_in_seven_tool_steps_is_one_turn():
    note = new_item("spec", "note", "Acceptance criteria: UTF-8 with a BOM, ISO 8601 dates.")
    items, turn, events = replay([note], agent_turn(7))
    assert items == [note] and note.heat == pytest.approx(0.7) and turn == []
    assert events == []
    items, _, _ = replay(items, agent_turn(7) * 3)  # three more turns: four in all
    assert note.heat == pytest.approx(0.7 ** 4) and note.compressed is not None


def test_a_step_that_refers_to_a_cooled_item_restores_it_at_once():
    note = new_item("n", "note", "The exporter lives in src/export/writer_core.py today.")
    items, _, _ = replay([note], agent_turn(1) * 4)
    assert note.compressed is not None
    steps = agent_turn(1, answer=None) + [Message(role="assistant", content="", tool_calls=[
        ToolCall(id="w", name="read_file", arguments='{"path": "src/export/writer_core.py"}')])]
    items, turn, events = replay(items, steps)
    assert note.compressed is None and note.heat == 1.0 and len(turn) == 2
    assert [e.action for e in events] == ["restored"]
    items, turn, _ = replay(items, [Message(role="assistant", content="Done.")], turn)
    assert note.heat == 1.0 and turn == []  # the turn's steps referred to it: not cooled


def test_a_turn_of_steps_without_an_answer_ends_at_the_next_user_message():
    note = new_item("n", "note", "Acceptance criteria: UTF-8 with a BOM, ISO 8601 dates.")
    steps = agent_turn(3, answer=None)
    items, turn, _ = replay([note], steps)
    assert note.heat == 1.0 and len(turn) == 3
    assert turn_so_far(steps) == turn  # what a later append reads back from the history
    items, turn, _ = replay(items, [Message(role="user", content="stop, do it differently")],
                            turn)
    assert note.heat == pytest.approx(0.7) and turn == []


def test_decay_thresholds_are_configurable():
    items = [new_item("it", "note", "some note about config_loader.py")]
    policy = DecayPolicy(factor=0.5, compress_below=0.6, remove_below=0.3)
    items, events = decay_turn(items, "", short, policy)
    assert [e.action for e in events] == ["compressed"] and items[0].heat == 0.5
    items, events = decay_turn(items, "", short, policy)
    assert items == []
    assert [e.action for e in events] == ["removed"]


def test_a_short_form_that_keeps_nothing_leaves_the_item_whole():
    items = [new_item("it", "note", "用户希望我们先讨论架构决策。", optional=False)]
    for _ in range(4):
        items, events = decay_turn(items, "", lambda text: "", DecayPolicy())
        assert events == []
    assert items[0].compressed is None and items[0].shown == "用户希望我们先讨论架构决策。"


def test_an_empty_short_form_stored_earlier_is_read_as_the_whole_item():
    """Earlier builds stored "" as the short form of a note with no space to cut at."""
    import msgspec

    from ctxlayer.core.zones.working import WorkingItem, render_item

    stored = b'{"id":"zh","kind":"note","content":"\xe5\x85\x88\xe8\xae\xa8\xe8\xae\xba",' \
             b'"optional":false,"heat":0.24,"compressed":""}'
    item = msgspec.json.decode(stored, type=WorkingItem)
    assert item.shown == "先讨论" and render_item(item) == "## [note] (zh)\n先讨论"


# --- modes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode, room, rules, working, total", [
    ("short", 100_000, 400, 1000, 2000),
    ("deep", 100_000, 3200, 6400, 8000),
    ("debug", 100_000, 400, 3600, 4000),
    ("deep", 1000, 400, 800, 1000),  # a small budget shrinks the cap
])
def test_zone_limits(mode, room, rules, working, total):
    limits = zone_limits(DEFAULT_MODES[mode], room)
    assert (limits.rules, limits.working, limits.total) == (rules, working, total)


@pytest.mark.parametrize("text, current, suggested", [
    ("Please refactor the data layer", "short", "deep"),
    ("implement OAuth login", "debug", "deep"),
    ("I get this stack trace when saving", "deep", "debug"),
    ("there is a bug in the parser", "short", "debug"),
    ("线上报错了，帮我看看", "deep", "debug"),
    ("帮我重构数据层", "short", "deep"),
    ("refactor it", "deep", None),  # already there: nothing to suggest
    ("what does this regex match?", "deep", None),
])
def test_mode_suggestion(text, current, suggested):
    suggestion = suggest_mode(text, current)
    assert (suggestion.mode if suggestion else None) == suggested
    if suggestion:
        assert "?" in suggestion.reason


def test_a_cooled_item_shrinks_to_about_a_quarter_and_keeps_its_facts():
    from ctxlayer.core.zones.compact import compress_item

    text = ("The import job failed again this morning after the nightly schedule started. "
            "The traceback points at src/etl/loader.py line 318 in parse_batch(rows: list[Row]) "
            "-> Batch, which raised error E2207 when the upstream feed sent an empty header. "
            + "We discussed several possible causes at length without reaching a conclusion. " * 12
            + "Run `pytest tests/test_loader.py -k empty_header` to reproduce it.")
    short = compress_item(text)
    assert len(short) <= len(text) * 0.35
    for fact in ("src/etl/loader.py", "line 318", "E2207", "parse_batch",
                 "pytest tests/test_loader.py -k empty_header"):
        assert fact in short


PATHS = [f"services/billing/handlers/invoice_batch_{k}/retry_policy.py" for k in range(12)]


@pytest.mark.parametrize("text", [
    "Keep the database schema in migrations/0007_add_index.sql unchanged; it has the unique "
    "index on users.email that production relies on.",
    "Traceback: KeyError 'user_id' raised in api/handlers/session.py line 77 (get_session). The "
    "command `pytest -k test_session_expiry` reproduces it. Also config/settings.toml sets "
    "timeout=30. " + "Some more prose about the situation that is not very important. " * 8,
    "The retry touches " + ", ".join(PATHS) + ". " + "Nothing else was decided. " * 20,
])
def test_a_cooled_item_keeps_whole_facts_and_drops_the_ones_without_room(text):
    from ctxlayer.core.compress.facts import extract_facts
    from ctxlayer.core.zones.compact import compress_item

    facts = extract_facts(text)
    short = compress_item(text)
    assert len(short) <= max(90, len(text) * 0.3)
    # every path or setting shown is one of the facts, whole: never `migrations/0007_add_inde…`
    shown = {w.strip("`,.()") for w in short.split() if "/" in w or "=" in w}
    assert shown <= set(facts.paths) | set(facts.numbers), short
    left_out = [p for p in facts.paths if p not in short]
    if left_out:  # too many to fit: whole ones left out, and the ledger says how many
        assert f"(+{len(left_out)} more)" in short
    else:
        assert all(n in short for n in facts.numbers) and all(c in short for c in facts.commands)


@pytest.mark.parametrize(("prose", "limit", "want"), [
    ("keep migrations/0007_add_index.sql as it is", 30, "keep…"),
    ("keep migrations/0007_add_index.sql as it is", 37, "keep migrations/0007_add_index.sql…"),
    ("short enough", 12, "short enough"),
    ("migrations/0007_add_index.sql", 10, ""),
    # no space to cut at: between characters, before a run of name characters, never in it
    ("先讨论架构决策。他们想要小的拉取请求", 8, "先讨论架构决策…"),
    ("先改src/app.py再提交", 8, "先改…"),
    ('{"name":"alice","roles":["admin"]}', 14, '{"name":"…'),
])
def test_prose_is_cut_between_words(prose, limit, want):
    from ctxlayer.core.zones.compact import cut_between_words

    assert cut_between_words(prose, limit) == want


def test_a_turn_reads_its_reply_once_for_all_the_items(monkeypatch):
    """The turn runs under the lock every session waits on: reading a 150,000-character reply
    again for each of 200 items held the other sessions for seconds."""
    from ctxlayer.core.zones import references

    reads = []
    real = references.normalized_reply
    monkeypatch.setattr(references, "normalized_reply", lambda r: reads.append(r) or real(r))
    items = [new_item(f"n{k}", "note", f"see src/batches/b{k}.py for batch {k}") for k in range(50)]
    reply = "I opened src/batches/b7.py and nothing else. " * 100
    items, events = decay_turn(items, reply, short, DecayPolicy())
    assert len(reads) == 1
    # read once, it finds what it found read per item
    assert [e.item_id for e in events if e.action == "referenced"] == ["n7"]
    assert all(is_referenced(it.keys, references.Reply(reply))
               == is_referenced(it.keys, reply) for it in items)
