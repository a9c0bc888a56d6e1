"""What a client asks beside its chat: a title (OpenCode's, on a small model, as the chat
starts; Claude Code's in its terminal, on the chat's model, under its session id), a commit
message (aider's, after each edit it applies), a summary (aider's of its older turns; Qwen
Code's and OpenCode's before their own compaction), a title asked of another model with the
chat's whole history, a helper sent over the chat's turns as they end (Qwen Code's memory
agent) or asked the chat's answer (aider's editor, its architect's plan). Each comes as a
request of its own, so each was a conversation of its own: listed by `ctx/conversations`
(`ctxlayer chats`, `:Ctxlayer chats`) one more every time, and the live chat the editors'
status bars followed (after every aider edit: its commit message's 0.3% on a small model)
until the chat's next request. An aside is set aside (`Conversation.left_behind`): not
listed and not the live chat, until a request goes on in it.

Owns which conversation is an aside of which chat. Must not: keep state (Conversations does)
or import a face.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING

from ctxlayer.state import identity
from ctxlayer.state.asked import counted_alike

if TYPE_CHECKING:
    from ctxlayer.state.chat import Conversation

#: seconds after a chat's last turn within which a request that quotes it is its aside (titles,
#: commit messages and summaries are asked beside the turn they are of; a chat started later
#: with a question that another chat asked is a chat)
ASIDE_SECONDS = 120.0

#: seconds after a chat's last turn within which a request that carries its history under a
#: system prompt of its own is its helper (`helps`): a client's agent that goes over the turn
#: as it ends, not a person who changed the chat's mode and asked on
HELPER_SECONDS = 10.0

#: the fewest characters of a chat's answer a helper must carry to be taken for its helper
ANSWER_FROM = 40

#: the workspace's most recent chats a request is compared with: what it is asked beside took
#: a turn just before (a new chat compared with all 64 in memory took 0.2 ms more)
ASIDE_CHATS = 8


def settle(live: Iterable[Conversation], conv: Conversation, now: float) -> None:
    """After ``conv``'s turn, at ``now`` (monotonic seconds; ``live``: the conversations of its
    workspace, the most recent first): ``conv`` is set aside when it asks once
    (`identity.asks_once`; Claude Code asks its titles under the chat's session id, on the
    chat's model) and quotes one of the ASIDE_CHATS most recent chats that took a turn within
    ASIDE_SECONDS, with another system prompt than that chat's (a new chat of the same client
    that quotes the last one is a chat); otherwise each such request among them that quotes
    ``conv`` is (OpenCode and Claude Code ask for the title before the chat's first request
    reaches the gateway). A request a session id names is beside a chat of that session only:
    another client's chat that asks a question a chat asked is a chat."""
    recent = list(islice((c for c in live if c is not conv and not c.left_behind
                          and now - c.turned_at <= ASIDE_SECONDS), ASIDE_CHATS))
    if not recent:
        return
    system = conv.system()  # an aside has its own; a new chat of the same client has the chat's
    if conv.asked_once is not None and any(
            conv.client in (None, c.client) and c.system() != system
            and identity.quotes(conv.asked_once, c.chain) for c in recent):
        set_aside(conv)
        return
    for c in recent:
        if c.asked_once is not None and c.client in (None, conv.client) \
                and c.system() != system and identity.quotes(c.asked_once, conv.chain):
            set_aside(c)


def beside_refused(live: Iterable[Conversation], request: dict, client: str | None,
                   now: float) -> list[str]:
    """After a request refused before it took a turn (``request``, under the client run
    ``client``; ``live`` as for `settle`): what was asked beside it, as for a chat's turn in
    `settle`, is set aside. A chat's first request refused (OpenCode asks 32,000 tokens of
    output of a 24,000-token window) left the title asked before it the workspace's one chat,
    listed and live, with no chat to be beside. Returns the ids of those set aside."""
    chain, system = identity.turns(request), identity.system_of(request)
    out: list[str] = []
    for c in islice((c for c in live if not c.left_behind
                     and now - c.turned_at <= ASIDE_SECONDS), ASIDE_CHATS):
        if c.asked_once is not None and c.client in (None, client) \
                and c.system() != system and identity.quotes(c.asked_once, chain):
            set_aside(c)
            out.append(c.conversation_id)
    return out


def helps(live: Iterable[Conversation], conv: Conversation, now: float) -> None:
    """After ``conv``'s turn (``live`` as for `settle`): ``conv`` is set aside, as the chat's
    helper, when no session id names it and its request carries, under a system prompt of its
    own, the history of a chat that took a turn within HELPER_SECONDS (`identity.repeats`:
    Qwen Code's memory agent goes over each turn, tools and all, as it ends), or that chat's
    last answer, given within HELPER_SECONDS (`identity.carries`: aider's editor is asked its
    architect's answer); for the chat it helped before, ASIDE_SECONDS, as its own loop goes
    on. A chat whose client changes its system prompt and goes on with a question is asked
    later than that."""
    if conv.client is not None:
        conv.beside = None
        return
    system = conv.system()

    def helped(c: Conversation) -> bool:
        within = ASIDE_SECONDS if c.conversation_id == conv.beside else HELPER_SECONDS
        if c is conv or c.left_behind or c.client is not None or c.beside is not None:
            return False
        history = now - c.turned_at <= within
        answer = len(c.answer.strip()) >= ANSWER_FROM and now - c.answered_at <= within
        return (history or answer) and c.system() != system and (
            (history and identity.repeats(c.chain, conv.chain))
            or (answer and identity.carries(c.answer.strip(), conv.chain)))

    chat = next((c for c in islice(live, ASIDE_CHATS) if helped(c)), None)
    conv.beside = chat.conversation_id if chat is not None else None
    if chat is not None:
        set_aside(conv)


def went_on_without(live: Iterable[Conversation], conv: Conversation, before: list,
                    since: float) -> None:
    """After a request of ``conv`` (``before``: its chain until then, its last turn at
    ``since``; ``live``: its workspace's conversations, the most recent first): a
    conversation of its family or client run that took ``conv``'s history further since that
    turn, and that ``conv`` now went on without, is set aside. Such a request is on a model
    counted otherwise (on one counted alike it would have gone on in ``conv``): a title asked
    of a small model with the chat's whole history, under the chat's session id (a family per
    model) or none (`Conversations._by_chain`). After a `/model` the chat goes on in the other
    model's conversation, and back on the first model the other's chain is part of the
    chat's: neither is set aside. Nor is one of its family on a model counted alike: its chain
    put it apart from ``conv``, another chat that opened alike (of two chats asking the same
    first question, the one that took its second turn hid the other from `ctxlayer chats`)."""
    if not before:  # its first request
        return
    beside = [c for c in islice(live, ASIDE_CHATS) if c is not conv and not c.left_behind
              and c.turned_at > since
              and (c.family == conv.family or (c.client is not None and c.client == conv.client))]
    if not beside or identity.shared(before, conv.chain) < len(before):
        return  # nothing asked beside it, or this request edits the chat: it did not go on
    for c in beside:
        if c.family == conv.family and counted_alike(c.model, conv.model):
            continue
        if identity.shared(before, c.chain) == len(before) \
                and identity.shared(c.chain, conv.chain) < len(c.chain):
            set_aside(c)


def before_compaction(live: list[Conversation], chat: Conversation) -> None:
    """What the client asked beside ``chat`` since its last turn, before its compaction (its
    summary, a title: no tools, a system prompt of their own; ``live`` oldest first) is set
    aside: `ctxlayer chats` shows the chat, not one more per compaction."""
    for c in live[live.index(chat) + 1:]:
        if c.client is None and c.tools_tokens == 0 and c.system() != chat.system():
            set_aside(c)


def before_kept_compaction(live: Iterable[Conversation], chat: Conversation,
                           now: float) -> None:
    """After ``chat``'s request, a history its client's compaction wrote that took up the
    chat's kept window (after a restart: the chat was not in memory; ``live`` as for
    `settle`): what the client asked once beside it just before (within ASIDE_SECONDS, no
    session id, another system prompt: its summary) is set aside, as `before_compaction`
    does in memory. aider restored with its summary after a restart: the summary it asked as
    it started found no chat to quote, and was listed and the live chat."""
    system = chat.system()
    for c in islice((c for c in live if c is not chat and not c.left_behind
                     and now - c.turned_at <= ASIDE_SECONDS), ASIDE_CHATS):
        if c.client is None and c.asked_once is not None and c.system() != system:
            set_aside(c)


def set_aside(c: Conversation) -> None:
    """Not listed, not the live chat, and the first to leave memory when it is full (a chat
    of aider's leaves a commit message's conversation after each edit)."""
    c.left_behind = c.aside = True
