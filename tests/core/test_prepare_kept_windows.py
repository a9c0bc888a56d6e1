"""Which kept window a request takes up when the windows are read only as far as judging
agreement needs (core/prepare/persist.py `KeptWindow`, resuming.py `resume_best`): the window
chosen and the state made of it are those of the rule as it was when every window was decoded
whole, for random families of kept windows (a chat's prefixes, edits, another system prompt,
aider's files written anew, what a later turn sent beside a window, windows that do not read
whole) and random requests, ``least`` and ``beyond``.

Before, the state folder's 8 most recent windows were decoded whole for every new chat after
a restart (1.7 to 3.4 ms a chat for 72 KB windows), to take up one at most."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.core.prepare import persist, prepare_turn, resuming
from ctxlayer.core.prepare.model import DEFAULT_POLICY, ConversationState, common_prefix
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()
SYSTEMS = (Message(role="system", content="Be precise. " * 5),
           Message(role="system", content="You are another assistant."))
FILES = ("I have *added these files to the chat* so you can go ahead and edit them.\n\n"
         "adder.py\n```\ndef add(a, b):\n    return a + b\n```\n")


def _history(rnd: random.Random, exchanges: int, files: bool) -> list[Message]:
    """A chat's messages, aider's files after its system prompt when ``files``."""
    out = [SYSTEMS[0]]
    if files:
        out += [Message(role="user", content=FILES),
                Message(role="assistant", content="Ok, any changes I propose will be to "
                        "those files.")]
    for t in range(exchanges):
        out += [Message(role="user", content=f"question {t} " + "ask " * rnd.randint(1, 30)),
                Message(role="assistant", content=f"answer {t} "
                        + "word " * rnd.randint(5, 200))]
    return out


def _asked(rnd: random.Random, history: list[Message], files: bool) -> list[Message]:
    """A request: a prefix of ``history`` (an edit in it, maybe) and a new question."""
    return [*_edited(rnd, history[:rnd.randint(1, len(history))], files),
            Message(role="user", content=f"new question {rnd.random()}")]


def _edited(rnd: random.Random, messages: list[Message], files: bool) -> list[Message]:
    """``messages``, or now and then with another system prompt, an edit, the files
    written anew."""
    out = list(messages)
    what = rnd.random()
    if what < 0.15:
        out[0] = SYSTEMS[1]
    elif what < 0.3 and len(out) > 1:
        i = rnd.randrange(1, len(out))
        out[i] = Message(role=out[i].role, content=out[i].content + " (edited)")
    elif what < 0.5 and files and len(out) > 1:
        out[1] = Message(role="user", content=FILES.replace("a + b", "a - b"))
    return out


def _kept(rnd: random.Random, history: list[Message], files: bool, turn: int
          ) -> tuple[bytes, tuple[int, bytes] | None]:
    """A window of a chat that went as ``history`` (or as a request like it), its bytes as
    the state folder keeps them, and what a later turn that went on as ``history`` sent
    beside it, if anything."""
    cut = rnd.randint(1, len(history))
    messages = _edited(rnd, history[:cut], files)
    budget = rnd.choice((300, 600, 1200, 5000))
    state = None
    for m in sorted({rnd.randint(1, cut) for _ in range(3)} | {cut}):
        state = prepare_turn(state, messages[:m], budget, WORDS).state
    assert state is not None
    body = persist.encode(persist.snapshot(state, rnd.choice((WORDS.name, ""))))
    sent = None
    went_on = [*messages, *history[cut:cut + rnd.randint(1, 4)]]
    later = prepare_turn(state, went_on, budget, WORDS).state
    if rnd.random() < 0.6 and persist.carries(state, later):
        last = persist.sent(state, later, persist.hashed(None, later.messages),
                            rnd.choice((turn, turn - 1)), WORDS.name)
        sent = (rnd.choice((turn, turn, turn + 1)), persist.encode_sent(last))
    return _spoiled(rnd, body), sent


def _spoiled(rnd: random.Random, body: bytes) -> bytes:
    """``body``, or now and then a window that does not read (of another version, not JSON)
    or reads only in part (a field the choice skips is not what a window keeps)."""
    what = rnd.random()
    if what < 0.75:
        return body
    kept = json.loads(body)
    if what < 0.8:
        return b"{not json"
    if what < 0.85:
        kept["version"] = persist.VERSION + 1
    elif what < 0.9:
        del kept["frontier"]
    else:
        kept[rnd.choice(("chunks", "told", "ids", "restored_audit"))] = 7
    return json.dumps(kept).encode()


def _as_it_was(windows: list[tuple[str, int, bytes, tuple[int, bytes] | None]],
               messages: list[Message], least: int | None,
               beyond: ConversationState | None) -> tuple[str, ConversationState] | None:
    """The window taken up and its state as when every window was decoded whole (upkeep's
    `_as_sent` then), and the first that agreed the furthest was taken (`resume_best`)."""
    snaps = []
    for cid, turn, body, sent in windows:
        snap = persist.decode(body)
        if snap is None:
            continue
        if sent is not None and sent[0] == turn:
            last = persist.decode_sent(sent[1])
            snap = persist.as_sent(snap, last) if last is not None and last.turn == turn \
                else snap
        snaps.append((cid, snap))
    hashes: list[str] = []
    best = -1
    most = resuming._carried(beyond, messages) if beyond is not None else -1
    # and message for message, as the live chat's chain is compared in memory
    plain = common_prefix(beyond.messages, messages) if beyond is not None else -1
    for n, (_, snap) in enumerate(snaps):
        same = resuming._agreement(snap, messages, hashes)
        k, _ = resuming._reach(snap, messages, same)
        if k > most and same > plain and k >= (snap.head + 1 if least is None else least):
            best, most = n, k
    if best < 0:
        return None
    state = resuming.resume(snaps[best][1], messages, WORDS, DEFAULT_POLICY, hashes, edit=True)
    return (snaps[best][0], state) if state is not None else None


def _chosen(windows: list[tuple[str, int, bytes, tuple[int, bytes] | None]],
            messages: list[Message], least: int | None, beyond: ConversationState | None,
            lazily: bool) -> tuple[str, ConversationState] | None:
    """The window taken up and its state as the state reads windows now: a new chat's
    forks read `lazily` (`KeptWindow`), a family's decoded whole (`decode_kept`)."""
    read = []
    for cid, turn, body, sent in windows:
        window = persist.KeptWindow.read(body, turn, sent) if lazily \
            else persist.decode_kept(body, turn, sent)
        if window is not None:
            read.append((cid, window))
    found = resuming.resume_best([w for _, w in read], messages, WORDS, DEFAULT_POLICY,
                                beyond=beyond, least=least)
    return None if found is None else (read[found[0]][0], found[1])


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2 ** 32), st.integers(1, 8), st.sampled_from((None, 0, 1)),
       st.booleans(), st.booleans())
def test_the_window_taken_up_and_its_state_are_those_of_reading_every_window_whole(
        seed, count, least, files, edited):
    rnd = random.Random(seed)
    history = _history(rnd, rnd.randint(2, 14), files)
    windows = []
    for n in range(count):
        turn = rnd.randint(1, 5)
        windows.append((f"chat-{n}", turn, *_kept(rnd, history, files, turn)))
    messages = _asked(rnd, history, files)
    beyond = prepare_turn(None, messages[:rnd.randint(1, len(messages))], 5000,
                          WORDS).state if edited else None
    before = _as_it_was(windows, messages, least, beyond)
    assert _chosen(windows, messages, least, beyond, lazily=True) == before
    assert _chosen(windows, messages, least, beyond, lazily=False) == before


def _window(messages: list[Message], budget: int = 300) -> bytes:
    return persist.encode(persist.snapshot(prepare_turn(None, messages, budget, WORDS).state,
                                           WORDS.name))


def test_the_window_agreeing_furthest_that_does_not_read_whole_is_passed_over():
    """As when every window was decoded whole and one that did not was never read: the
    next that agrees the furthest is taken up, and the broken one is decoded no further."""
    history = _history(random.Random(7), 12, False)
    further = json.loads(_window(history[:21]))
    further["chunks"] = 7  # not what a window keeps: it does not read whole
    shorter = _window(history[:13])
    windows = [persist.KeptWindow.read(json.dumps(further).encode(), 1, None),
               persist.KeptWindow.read(shorter, 1, None)]
    assert all(w is not None for w in windows)
    messages = [*history[:21], Message(role="user", content="and now?")]
    found = resuming.resume_best(windows, messages, WORDS, DEFAULT_POLICY, least=1)
    assert found is not None and found[0] == 1
    assert found[1] == resuming.resume(persist.decode(shorter), messages, WORDS,
                                      DEFAULT_POLICY, edit=True)
    assert windows[0].whole() is None


def test_a_window_that_agrees_with_none_is_never_decoded_whole(monkeypatch):
    """A new chat after a restart compares itself with the workspace's most recent windows
    and mostly takes up none: none of them is decoded whole (each cost 180 us for 72 KB)."""
    history = _history(random.Random(3), 12, False)
    windows = [persist.KeptWindow.read(_window(history[:n]), 1, None) for n in (9, 15, 21)]
    decoded: list[bytes] = []
    whole = persist.decode
    monkeypatch.setattr(persist, "decode", lambda data: decoded.append(data) or whole(data))
    other = [SYSTEMS[1], Message(role="user", content="a chat of its own")]
    assert resuming.resume_best(windows, other, WORDS, DEFAULT_POLICY, least=1) is None
    assert decoded == []


def test_a_request_goes_on_from_the_window_whose_last_question_it_carries_answered():
    """The last question of a kept window is what a request going on from it carries,
    answered, however little else agrees (its first question edited in place): read lazily or
    whole, and as a later turn that did not move the window sent it (`Sent`). A fork of the
    chat, which went its own way before that question, goes on from none of it."""
    history = _history(random.Random(5), 10, False)  # system, then question, answer, ...
    first = prepare_turn(None, history[:16], 300, WORDS).state  # up to question 7
    later = prepare_turn(first, history[:18], 300, WORDS).state  # question 8, the same window
    assert persist.carries(first, later)
    body = persist.encode(persist.snapshot(first, WORDS.name))
    sent = persist.encode_sent(persist.sent(first, later, persist.hashed(None, later.messages),
                                            1, WORDS.name))
    windows = [persist.KeptWindow.read(body, 1, (1, sent)), persist.decode_kept(body, 1, (1, sent))]
    edited = [history[0], Message(role="user", content=history[1].content + " (edited)"),
              *history[2:18], Message(role="assistant", content="an answer"),
              Message(role="user", content="and now?")]
    fork = [*history[:16], Message(role="assistant", content="another answer"),
            Message(role="user", content="elsewhere?")]
    for window in windows:
        assert resuming.goes_on([window], edited) == 0
        assert resuming.goes_on([window], edited, system=True) == 0
        assert resuming.goes_on([window], history[:18]) is None  # question 8 not answered
        assert resuming.goes_on([window], fork) is None
    assert resuming.goes_on([persist.KeptWindow.read(body, 1, None)], fork) == 0
    other = [SYSTEMS[1], *edited[1:]]
    assert resuming.goes_on(windows, other, system=True) is None
