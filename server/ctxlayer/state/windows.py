"""The windows kept in the state folder, as a live chat's turn takes them up: after a restart
(no turn in memory) the window of its own chat or family it goes on from, or, new here, the
window of the chat it forks (`kept_start`); whether the tool definitions are the ones the
request it starts from sent (`tools_reused`); a history that fits made again whole (`anew`);
and the figures a kept window says for the listing (`kept_figures`).
Pure but for `kept_figures`, which reads the store (on a thread). Must not: keep a window
(upkeep.py writes them) or hold a conversation's lane (conversations.py does).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ctxlayer import protocol
from ctxlayer.core.prepare import (
    DEFAULT_POLICY,
    ConversationState,
    Turn,
    persist,
    prepare_turn,
    resuming,
)
from ctxlayer.state import identity
from ctxlayer.state.chat import Conversation
from ctxlayer.state.session_service import chat_of
from ctxlayer.state.upkeep import Fork, Kept


def kept_figures(store: Any, workspace: str, session_id: str
                 ) -> tuple[protocol.Budget | None, int] | None:
    """(the Budget, the messages) the window kept of the chat ``session_id`` backs says,
    None when none is kept (`persist.figures`). Reads the store: on a thread."""
    cid = chat_of(session_id)
    row = store.conversation(workspace, cid) if cid is not None else None
    return persist.figures(row[2]) if row is not None else None


def tools_reused(turn: Turn, tools: int, last: Any, kept_tools: str | None, request: dict
                  ) -> Turn:
    """``turn``, its cache reuse counting the tool definitions when they (and the tool
    choice) are the previous request's: they open the prompt the provider caches. OpenCode's
    take 6k tokens: its chats showed a reuse of 2.4k for requests the provider read 8.4k of
    from its cache. ``last``: the request read before (the chat's own, or for a new chat
    branched from a live one that one's). A turn that started from a kept window (after a
    restart, the previous request is not in memory) compares them with what that window kept
    of them (``kept_tools``, `window_tools`)."""
    if not tools:
        return turn
    if kept_tools is not None:
        same = kept_tools != "" and kept_tools == persist.tools_key(request)
    else:
        previous = last.payload if last is not None else None
        same = isinstance(previous, dict) and all(
            previous.get(k) == request.get(k) for k in persist.TOOLS_FIELDS)
    if not same:
        return turn
    return dataclasses.replace(turn, cache_reuse_tokens=turn.cache_reuse_tokens + tools)


def window_tools(took: Kept | None, forks_of: list[Fork], forked: list[str]) -> str | None:
    """`persist.tools_key` of the request whose kept window the turn started from: its own
    (``took``) or, for a new chat, another chat's it forked (``forked``: its id, one of
    ``forks_of``); None when it started from no kept window. A fork's first estimate left
    Claude Code's tools out (22.3k said of 30,970 tokens, 8,746 of them the tools)."""
    if took is not None:
        return took[2].tools
    window = next((f[2].whole() for f in forks_of if forked and f[0] == forked[0]), None)
    return window.tools if window is not None else None


def kept_start(kept: list[Kept], forks_of: list[Fork], messages: list, counter: Any,
                previous: ConversationState | None, family: str | None,
                restored: frozenset[str], times: int = 1, compacted: bool = False
                ) -> tuple[ConversationState | None, Kept | None, list[str], frozenset[str]]:
    """(the state a fitted turn starts from, the window it took up, the id of the chat whose
    kept window it forks, the restored ids it shows): ``previous`` and ``restored`` unless a
    kept window agrees with ``messages`` further (``times`` as far). One of its own
    (``kept``; however little of it agrees for a conversation the client named, ``family``
    None: an edit of its first question), else, new here, another chat's (``forks_of``).
    As in memory (`Conversations._by_chain`, `_unhinted_family`), a request new here that
    agrees with none goes on in the window whose last question it carries, answered
    (`going_on`): of its family, or, its opening written anew with no client session id
    to name its family (aider's files message, an edited first question), of another
    family with its system prompt; before, a chat of its own, the chat it went on listed
    beside it. So does a history its client's compaction wrote (``compacted``), in the most
    recent window with its system prompt, as in memory: aider's restored with its summary as
    the first request after a restart was a new chat, the chat it went on listed with its old
    figures."""
    if kept:
        found = resuming.resume_best([k[2] for k in kept], messages, counter, DEFAULT_POLICY,
                                    beyond=previous, least=0 if family is None else None,
                                    times=times)
        state, took = (None, None) if found is None else (found[1], kept[found[0]])
        if found is None and family is not None and previous is None:
            state, took = going_on(kept, messages, counter, system=False)
        if state is None or took is None:
            return previous, None, [], restored
        return state, took, [], frozenset(took[2].restored)  # the ids restored in that chat
    if forks_of and previous is None and identity.chain_family(family) is not None:
        chains = [k for k in forks_of if identity.chain_family(k[0]) is not None]
        state, took = going_on(chains, messages, counter, system=True, compacted=compacted)
        if state is not None and took is not None:
            return state, took, [], frozenset(took[2].restored)
    if forks_of:
        found = resuming.resume_best([k[2] for k in forks_of], messages, counter,
                                    DEFAULT_POLICY, beyond=previous, least=1)
        if found is not None:
            # the ids restored in that chat, as the state made of its window holds them
            return found[1], None, [forks_of[found[0]][0]], frozenset(found[1].restored)
    return previous, None, [], restored


def going_on(windows: list[Kept] | list[Fork], messages: list, counter: Any, system: bool,
             compacted: bool = False) -> tuple[ConversationState | None, Kept | None]:
    """(the state made of it, the window decoded whole) of the window of ``windows`` that
    ``messages`` go on from (`resuming.goes_on`; ``compacted``, a history its client's
    compaction wrote, else the first with its system prompt: `resuming.opens_as`), taken up
    as an edit as far as they agree (its system prompt reused, as the chat in memory edited
    so); (None, None) when none."""
    n = resuming.goes_on([k[2] for k in windows], messages, system)
    if n is None and compacted:
        n = resuming.opens_as([k[2] for k in windows], messages)
    if n is None:
        return None, None
    rid, turn, window = windows[n]
    whole = window.whole() if isinstance(window, persist.KeptWindow) else window
    found = None if whole is None else resuming.resume_best(
        [whole], messages, counter, DEFAULT_POLICY, least=0)
    if found is None or whole is None:
        return None, None
    return found[1], (rid, turn, whole)


def own_window(conv: Conversation, kept: list[Kept], last: Any) -> Kept | None:
    """For a request whose history the provider keeps (no window taken up: nothing to fit),
    the window kept under ``conv``'s own id when nothing of its chat is in memory (``last``:
    the request its last turn read, None after a restart): what its tools are compared with
    (before, its first turn after a restart said no reuse where the tools were the same)."""
    if not conv.provider_history or last is not None:
        return None
    return next((k for k in kept if k[0] == conv.conversation_id), None)


def anew(turn: Turn, start: ConversationState | None, branch: bool, messages: list,
          budget: int, counter: Any, shown: frozenset[str]) -> tuple[Turn, bool]:
    """(the turn, whether it still starts from another chat's window): made again from
    nothing where a window it started from shortened a history that goes whole. A chat's
    window is taken over for a history past its budget (a fork of a long chat); one that fits
    goes whole, as a new chat's would (a chat forgotten from memory before its first step
    took the summaries of a fork of it, for a history under its budget). A window whose
    budget grew is made again by the engine itself (`engine._regrows`)."""
    if branch and fits_whole(turn.state, budget):
        return prepare_turn(None, messages, budget, counter, restored=shown), False
    return turn, branch


def fits_whole(st: ConversationState, budget: int) -> bool:
    """Whether a turn's whole history, nothing shortened, fits ``budget``."""
    return DEFAULT_POLICY.fmt.reply_priming + st.cum[-1] <= budget
