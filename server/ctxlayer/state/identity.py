"""Which conversation a request belongs to, when the client did not name it.

Requests form a family: those of one client session id on one model (the gateway passes
Claude Code's `x-claude-code-session-id`; a body's Anthropic `metadata.user_id`, OpenAI
`prompt_cache_key`, then `user`: Claude Code's sub-agents send chats of their own under its
session id, on its model or another (the Agent tool's `model`)), else those that share their
first messages (system text and the first message after it, text only). Within a family a
request belongs to the conversation whose last request it extends (unless one whose tail it
replaces shares far more with it: `far_past`), else to the one whose tail it replaces the
furthest along (an edit, a regenerated answer, a rewind), else (it
shares no message with any but its system prompt) to one of its own. The caller then keeps
the chain that was replaced as a conversation of its own (a fork): if that chat goes on, its
next request extends it and lands there, with its own summary chunks. One exception to "one
of its own": a history a client's own compaction wrote (`compacted`: Claude Code's, Qwen
Code's and OpenCode's open with its summary, `cn`'s with the assistant's, sharing no message
with the chain it replaces) goes on in the family's most recent conversation with the same
system prompt, as an edit; with no session id to name the family, in the workspace's most
recent one on the model with that system prompt (the summary opens it, so it starts like no
chat). Likewise a request that carries a chat's last question, answered, goes on in it
(`goes_on`: aider writes its repo map and files, its opening, anew as the chat's files
change).

Owns the pure parts of that decision: the hints, the ids, how far two chains agree.
Must not: keep state (Conversations does), or import a face.
"""

from __future__ import annotations

import re
from typing import Any

from ctxlayer.core.formats import codec
from ctxlayer.core.prepare.persist import tells_a_chat
from ctxlayer.core.text import content_hash
from ctxlayer.state.chatcodec import identity_text, text_of


def client_hint(fmt: str, request: dict, header: str | None) -> str | None:
    """The client's own id of its chat: the header the face read, else the body's."""
    if header:
        return header
    for path in codec(fmt).hints:  # where this format carries it
        found: Any = request
        for key in path.split("."):
            found = found.get(key) if isinstance(found, dict) else None
        if isinstance(found, str) and found:
            return found
    return None


def hinted_id(fmt: str, hint: str, model: str) -> str:
    """The family of a client session id on ``model``, the id of its first conversation (never
    the session id itself: it may be long)."""
    return "s" + content_hash(f"{fmt}\x00{hint}\x00{model}")


def older_hinted_id(fmt: str, hint: str) -> str:
    """The family a client session id had before ids named the model (stop 44, `ce5022b`):
    windows a state folder kept under it are still read, when the family has none of its own,
    so a chat going on after an upgrade starts from its window, not afresh."""
    return "s" + content_hash(f"{fmt}\x00{hint}")


def provider_history(fmt: str, request: dict) -> tuple[str, str] | None:
    """(what names it, its id) of the history the provider keeps for a Responses request:
    its `conversation` (`conversation`), else the answer it goes on from
    (`previous_response_id`: `response`); None for any other request."""
    if fmt != "responses":
        return None
    conv = request.get("conversation")
    conv = conv.get("id") if isinstance(conv, dict) else conv
    if isinstance(conv, str) and conv:
        return "conversation", conv
    previous = request.get("previous_response_id")
    return ("response", previous) if isinstance(previous, str) and previous else None


def provider_chat_id(fmt: str, name: str) -> str:
    """The conversation of the provider's conversation ``name`` (never the id itself)."""
    return "p" + content_hash(f"{fmt}\x00{name}")


def family_id(fmt: str, request: dict) -> str:
    """The id of the first conversation of the requests that start this way."""
    return "c" + content_hash(identity_text(fmt, request))


#: a `family_id`: "c" and a `content_hash`
_FAMILY = re.compile(r"c[0-9a-f]{16}")


def chain_family(cid: str | None) -> str | None:
    """The family (`family_id`) of a conversation id given to requests that start alike, or
    to a fork of one (``<family>-<run><n>``); None for any other id (a client session's, a
    name the client gave): the family a kept window's chat belongs to, after a restart."""
    if cid is None:
        return None
    family = cid.split("-", 1)[0]
    return family if _FAMILY.fullmatch(family) else None


def turns(request: dict) -> list:
    """The request's conversation as the client sent it (`messages`, or a Responses `input`:
    a string is one user message; as none, the same request sent again shared nothing with
    the last and was made a conversation of its own each time)."""
    for key in ("messages", "input"):
        value = request.get(key)
        if isinstance(value, list):
            return value
        if key == "input" and isinstance(value, str):
            return [{"role": "user", "content": value}]
    return []


def _plain(value: Any) -> Any:
    """`value` without its cache_control markers (clients move them from turn to turn); as it
    is when nested deeper than a walk goes (a tool's input 900 levels deep was a 500 on every
    turn of its chat): compared with its markers, as sent."""
    try:
        return _unmarked(value)
    except RecursionError:
        return value


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


#: how a block a client adds to a user message as its own note opens and ends
REMINDER = ("<system-reminder>", "</system-reminder>")


def _message(value: Any) -> Any:
    """A message as `shared` compares it: cache_control aside, and a text content given as a
    string the same as one text block (Claude Code sends a message of an earlier turn, a
    system message between turns, as blocks with a marker, then as a string); a Responses
    message item without its `id` (Codex's compaction sends the messages it keeps under new
    ids: its history then shared only its first developer message with the chat's); a user
    message without the text blocks that are the client's reminders (`qwen -c` resumes a
    session's history without the reminder of the date its first message had: a chat of its
    own, listed beside the one it went on)."""
    plain = _plain(value)
    if not isinstance(plain, dict):
        return plain
    if plain.get("type") == "message":  # a Responses message item: as the plain form
        plain = {k: v for k, v in plain.items() if k not in ("type", "id")}
    content = plain.get("content")
    if isinstance(content, str):
        plain["content"] = [{"type": "text", "text": content}]
    elif isinstance(content, list):  # Responses' text parts read as any text part
        plain["content"] = [{**p, "type": "text"} if isinstance(p, dict) and p.get("type") in
                            ("input_text", "output_text") else p for p in content]
        if plain.get("role") == "user":
            plain["content"] = [p for p in plain["content"] if not _reminder(p)]
    return plain


def _reminder(block: Any) -> bool:
    """Whether a content block is a text that is a client's reminder alone."""
    text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
    return isinstance(text, str) and text.strip().startswith(REMINDER[0]) \
        and text.strip().endswith(REMINDER[1])


def shared(before: list, now: list) -> int:
    """How many leading messages two chains share, cache_control and the form of a text
    aside. Most compare equal as they are (C speed); only the few a marker moved on are
    compared without it."""
    n = min(len(before), len(now))
    if before[:n] == now[:n]:
        return n
    for i in range(n):
        a, b = before[i], now[i]
        if a is not b and a != b and _message(a) != _message(b):
            return i
    return n


#: how many times more messages a chain a request edits must share with it than the chain it
#: extends holds, for the request to go on in the edited one: a chat that asked only another's
#: opening question ([system, question], 2 messages) and that other chat going back to its
#: 11th message, a new question after it (the other's 11 shared) was taken for the short
#: chat's next turn, summarized afresh (337 tokens sent, 130 reused, where its own window sent
#: 570, 536 reused). Twice, not once: a chat rewound to an earlier point whose next answer
#: came out as before (a model at temperature 0) shares one message more with the chain it
#: left than with its own, and goes on in its own
EDITS_PAST_EXTENDS = 2


def far_past(extended: int, edited: int) -> bool:
    """Whether a chain sharing ``edited`` leading messages with a request is its chat, rather
    than the chain of ``extended`` messages the request extends (`EDITS_PAST_EXTENDS`)."""
    return edited > EDITS_PAST_EXTENDS * extended


def best_match(chains: list[tuple[str, list]], now: list) -> tuple[str, bool] | None:
    """(conversation id, whether ``now`` extends its last request) of the chain ``now``
    belongs to, from ``chains`` (id, last request's messages), the most recent last: the
    longest it extends, unless one it edits shares far more with it (`far_past`), else the
    one it edits the furthest; None when it shares no message with any of them but its
    system prompt: on Chat Completions the system prompt is the first message, and a new
    chat of the same client (one `user`, one system prompt, another question) was taken for
    an edit of its last chat, which dropped out of the listing, its id answering for the new
    chat. On Anthropic's API the system prompt is no message, and such chats were two
    already."""
    edited: tuple[int, str] | None = None  # (shared, id) of the furthest edit
    extended: tuple[int, str] | None = None  # (its length, id) of the longest extended
    system = _after_system(now)
    for cid, chain in chains:
        p = shared(chain, now)
        if p == len(chain) and p > 0:
            if extended is None or p >= extended[0]:
                extended = (p, cid)
        elif p > system and (edited is None or p >= edited[0]):
            edited = (p, cid)
    if extended is not None and (edited is None or not far_past(extended[0], edited[0])):
        return extended[1], True
    if edited is not None:
        return edited[1], False
    return None


#: how the history a client's own compaction writes opens, its first user message: Claude Code's
#: (`/compact`, and its automatic compaction) starts with these words
COMPACTED_OPENINGS = ("This session is being continued from a previous conversation",
                      "<state_snapshot>")  # Qwen Code's summary
#: Qwen Code's ends with its order to resume (0.24: "Resume the prior task using the summary
#: above. Continue from the last in-flight step; ..."), a paragraph of its own
COMPACTED_ENDINGS = ("\n\nResume the prior task using the summary above.",)
#: OpenCode's is this question alone, its summary the assistant's answer after it
COMPACTED_QUESTIONS = ("What did we do so far?",)
#: aider's summary of the turns it restored (its `summary_prefix`; a summary it asks after an
#: edit it throws away) comes after what it writes anew first, its repo map answered; Codex's,
#: after its compaction of a resumed session, comes after the task and the newest question
#: (its opening messages in another order: they shared only the first with the chat's)
SUMMARY_OPENINGS = ("I spoke to you previously about a number of things.",
                    "Another language model started to solve this problem and produced a "
                    "summary of its thinking process.")
#: how many messages after the system prompt such a summary is looked for in
SUMMARY_WITHIN = 8
#: roles of the messages a chat's system prompt is given as (Chat Completions, Responses)
SYSTEM_ROLES = ("system", "developer")


def compacted(now: list) -> bool:
    """Whether ``now`` is a history a client's own compaction wrote: its first message after
    its system prompt is the assistant's (Continue's `cn` sends its summary so, then the
    turns after it; a chat that opens with a greeting is taken for one too, which is what
    two chats that open alike are: an edit of the other, until each goes on in its own), or
    a user message that opens as one, or one of its text blocks does (`COMPACTED_OPENINGS`),
    holds the order to resume after the summary (`COMPACTED_ENDINGS`), or asks what was done
    (`COMPACTED_QUESTIONS`) with an answer after it; or one of its first user messages is
    aider's summary (`SUMMARY_OPENINGS`)."""
    start = _after_system(now)
    first = now[start] if start < len(now) else None
    if isinstance(first, dict) and first.get("role") == "assistant":
        return True
    if any(isinstance(m, dict) and m.get("role") == "user"
           and text_of(m.get("content")).startswith(SUMMARY_OPENINGS)
           for m in now[start:start + SUMMARY_WITHIN]):
        return True
    if not isinstance(first, dict) or first.get("role") != "user":
        return False
    text, *blocks = _texts(first)
    # in its terminal Claude Code puts its reminders first, the summary in a block after them
    if any(t.startswith(COMPACTED_OPENINGS) for t in (text, *blocks)) \
            or any(e in text for e in COMPACTED_ENDINGS):
        return True
    answer = now[start + 1] if start + 1 < len(now) else None
    return text.strip() in COMPACTED_QUESTIONS and isinstance(answer, dict) \
        and answer.get("role") == "assistant"


def goes_on(chain: list, now: list) -> bool:
    """Whether ``now`` carries the last user message of ``chain`` (a chat's last request),
    answered: that chat going on, its opening written anew (aider's repo map and files). A
    question too short to tell a chat ("continue", "And f2?") counts only after the chat's
    question before it (`persist.tells_a_chat`): an unrelated chat that held "continue",
    answered, took the conversation of the last chat that ended so."""
    users = [k for k, m in enumerate(now) if isinstance(m, dict) and m.get("role") == "user"]
    answered = [k for k in users if k + 1 < len(now) and isinstance(now[k + 1], dict)
                and now[k + 1].get("role") == "assistant"]
    asked = [m for m in chain if isinstance(m, dict) and m.get("role") == "user"] \
        if answered else []  # a new chat's first request has none: no read
    if not asked:
        return False
    last, before = asked[-1], asked[-2] if len(asked) > 1 else None
    telling = tells_a_chat(_words(last))
    if not telling and before is None:
        return False
    for k in answered:
        if not _same_question(now[k], last):
            continue
        earlier = [j for j in users if j < k]
        if telling or earlier and _same_question(now[earlier[-1]], before):
            return True
    return False


def _same_question(m: dict, asked: dict) -> bool:
    """Whether user message ``m`` is the question ``asked``, however its client spaced it."""
    words = _words(asked)
    return m == asked or _message(m) == _message(asked) or bool(words) and _words(m) == words


def _words(message: dict) -> str:
    """A message's text as its words: aider restores a chat's history from its markdown log,
    each question with the two spaces and the newline of a markdown line end after it ("What
    does it do?  \n"), and the restored chat was listed as a second one."""
    return " ".join(text_of(message.get("content")).split())


#: characters a chat's message holds at least for a side request that holds it to be taken for
#: a quote of it (a word or two, "Fix it", could be anyone's)
QUOTED_FROM = 12
#: a chat's last user messages (with text) a side request is compared with: a title quotes
#: the question, a commit message the turns since the last commit, a summary all of them
QUOTED_LAST = 4


def asks_once(request: dict) -> str | None:
    """The text of a request that asks something once, beside a chat: no tools offered, and
    only user messages after its system prompt (OpenCode's title, aider's commit message and
    summary, a client's summarizer); None for any other (a chat with tools, one with an
    answer in it)."""
    if request.get("tools") or request.get("functions"):
        return None
    value = request.get("input")
    if isinstance(value, str):  # a Responses request's one message
        return value
    now = turns(request)
    rest = now[_after_system(now):]
    if not rest or any(not isinstance(m, dict) or m.get("role") != "user" for m in rest):
        return None
    return "\n".join(text_of(m.get("content")) for m in rest)


def quotes(text: str, chain: list) -> bool:
    """Whether ``text`` (a request that `asks_once`) holds one of the last user messages of
    ``chain`` (a chat's last request) word for word, and more beside it: the title of that
    chat's question, the commit message of its turns. Two requests of the same text do not
    quote each other."""
    seen, longest = 0, len(text.strip())
    for m in reversed(chain):
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        said = [t.strip() for t in _texts(m)]
        if not said[0]:  # tool results (Anthropic's come as user messages): not what was asked
            continue
        # the question may be one text block of several (Claude Code sends its reminders
        # beside it, in the same message)
        if any(QUOTED_FROM <= len(t) < longest and t in text for t in said):
            return True
        seen += 1
        if seen == QUOTED_LAST:
            return False
    return False


def repeats(chat: list, now: list) -> bool:
    """Whether ``now`` carries the history of ``chat`` (a chat's last request) after its own
    system prompt: all of it but at most its last message (a question the client asked of
    the chat beside it), then more, an answer among it."""
    history, rest = chat[_after_system(chat):], now[_after_system(now):]
    same = shared(history, rest)
    return same >= max(1, len(history) - 1) and len(rest) > same and any(
        isinstance(m, dict) and m.get("role") == "assistant" for m in rest[same - 1:])


def carries(text: str, now: list) -> bool:
    """Whether a user message of ``now`` (or one of its text blocks) holds ``text`` word for
    word: a chat's answer its client passed on to a helper."""
    return any(isinstance(m, dict) and m.get("role") == "user"
               and text in text_of(m.get("content")) for m in now)


#: how Claude Code's first system block starts: its billing header, whose version suffix
#: changes within a chat (`cc_version=2.1.332.8d3` before its `/compact` in its terminal,
#: `.cf6` after), so it is left out of the system prompt compared
BILLING_HEADER = "x-anthropic-billing-header:"


def system_of(request: dict) -> list:
    """A request's system prompt, wherever its format keeps it (`system`, `instructions`, its
    first messages), cache_control and Claude Code's billing header aside: what tells a
    chat's requests from its client's side requests (a summary, a title) and a
    sub-agent's."""
    head = turns(request)
    system = request.get("system")
    if isinstance(system, list):
        system = [b for b in system if not (isinstance(b, dict) and isinstance(
            b.get("text"), str) and b["text"].startswith(BILLING_HEADER))]
    return _plain([system, request.get("instructions"), head[:_after_system(head)]])


def _texts(message: dict) -> list[str]:
    """A message's text, then, when it has several text blocks, each block's."""
    content = message.get("content")
    blocks = [text_of([b]) for b in content] if isinstance(content, list) else []
    return [text_of(content), *(blocks if len(blocks) > 1 else ())]


def _after_system(now: list) -> int:
    """The index of the first message that is not the system prompt's."""
    n = 0
    while n < len(now) and isinstance(now[n], dict) and now[n].get("role") in SYSTEM_ROLES:
        n += 1
    return n
