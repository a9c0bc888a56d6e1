"""Preparing the request of a chat that resends its whole conversation every turn. The
semantics, stated once:

Input: the previous turn's ConversationState (or None), this turn's messages (the engine's view
from a format codec, ids stable across turns), a budget (tokens the request may use, reply
priming included), an injected counter, the ids the user restored.
Output: a Turn: the messages to send, their exact total, what was new this turn (summarized,
dropped, shortened), cache reuse and breakpoints, a one-line notice, and the next state.

1. Recognition: the longest run of leading messages equal to the previous turn's is reused
   with its counts; only the rest is counted. When nothing the window summarized changed (an
   appended turn, a regenerated reply, attached files written anew in place while the window
   showed them whole), the window carries over; otherwise it starts again.
2. The result is: the leading system messages; the summary chunks (user turns, oldest first);
   the messages shown whole among the summarized ones (pinned, restored, the newest user
   message when it is older than the boundary), in order; then every message from the
   boundary on, verbatim.
3. While that fits the budget nothing moves, so each result starts with the previous one and
   the provider's cached prefix holds. When it would not fit, a step first outlines: oldest
   first after the summaries (those shown whole beside them first), each long tool output
   or assistant message becomes its outline (one outlined before, or cut by the last resort,
   and still long is outlined again from its original) (the trim engine's shortening: a log's errors with
   their traceback lines, a JSON outline, head and tail lines; an assistant message long by its
   tool calls' arguments gets their long string values outlined, still a JSON object, and the
   codecs send those arguments; as long as the room allows, at least `outline_share` of the
   budget), only as short as bringing the request down to `target` of the budget needs (one
   outlined before and still long, as far as `again_target` needs, at once). The
   prefix before the first message it outlines holds. User messages (the
   user's words, files they added) are not outlined. The files a client attaches in front of
   the chat and sends again every turn (aider's read-only files, repo map and chat files:
   `attached.py`) are kept whole by every step; when they pass their share of the budget they
   are first shortened by each file's first and last lines, verbatim, and keep that text (cut
   again to the room when a later turn has room for at least twice what one shows). Only when the outlines are not enough
   does the step summarize the oldest verbatim messages, whole groups at a time (a tool call
   with its results), down to `summary_target`, never taking a group that would leave a
   request that fits under `summary_floor` of the budget; the last group always stays
   verbatim. Both targets follow the conversation's pace (`paced`): when its last four
   turns added more than `pace_from` of the budget a turn, they are lowered by the excess
   (by at most `pace_most`), so a fast chat is not stepped again at the next turn. A
   summary step adds a chunk and never rewrites an older one, so the prefix up to
   the older chunks holds too. A chunk never stands for messages on both sides of the newest
   question (with the user turns kept whole just before it): a step that reaches it makes
   the chunk of what came before and, when the request still needs it, a second one of the
   work on the question after it; chunks are not merged across it; and once a newer question
   came, the step that summarizes it merges it with the chunks of the work on it, so every
   summary is read after the question it answers and before the next one (a Claude Code
   session continued twice went out as Q0's summary, Q2, then a summary whose "Asked" was Q1
   and which held Q2's first call); when the chunks together pass `summaries_share` of the room
   (what the system prompt and the question leave of the budget) the fewest newest of them
   are merged into one that leave room below it for `merge_ahead` more chunks as big as the
   newest (`merge_goal`: the steps of the next turns add chunks without merging again; only
   the newest two, a merge freed a few tokens and the next turn merged again), else as few
   as get them under it; only when none does are they all merged into one (a rarer, bigger
   step), made to at most `merge_share` of that share: the rest is room for the
   next steps' chunks (made to the whole share, the next chunk passed it at once). A step
   counts the chunks as that merge will leave them, the new one guessed at most a third of
   what it stands for (and a little). A new or
   merged chunk grows into the room its step leaves below the target, and the chunks together
   to at least `summaries_min_share` of the room: once outlines keep the recent messages
   cheap, the ledger is what keeps the facts of the history.
   When the budget grew past the one the previous result was fitted to (a model with a bigger
   window, a budget set higher) and that window shortened something, the turn is made again
   as a first turn would be (the counts and facts read before reused), when the whole history
   goes within `target` of the new budget or the result carried over would take under
   `refit_below` of it, and the new result is bigger: outlines grow back and summaries are
   undone as far as the room allows, the cached prefix moves once, and what it cuts is told
   as new. A budget that grows a little, or holds, keeps the window.
4. The text of a chunk is the session engine's offline summary (decided / open, the user's hard
   constraints verbatim, an action log of the tool calls, a ranked facts ledger), its parts
   sized to that room, the ledger the most, as in a session's summary; it never changes once
   made.
5. Only when even that is over the budget (the newest exchange alone is), with attached files
   shown, the summaries shrink first and the files give what is still over (past half of
   them down to each file's first and last lines, when that leaves the newest question
   whole); else the trim engine fits the result, holding the files while it
   can, then at their floors (each file's ends, the line ranges kept named, the question
   given all the room left once they are) before they may be dropped whole: the newest
   user message is kept (whole when it takes at most half the budget, else shortened,
   never dropped: tried at a few sizes, then, when it ends the request and what is before
   it can give the next request what a step leaves free, or the files are at their
   floors, cut no further than
   the request needs; an agent's task beside the system prompt alone keeps the fixed size,
   which leaves the next requests room); restored and pinned messages are kept;
   the summaries are kept too (shortened at worst) unless that leaves no room for the newest
   exchange, or would leave the question no more than its first words (MIN_QUESTION tokens),
   or, when it ends the request (a chat's question), less than half the room the system
   prompt leaves (`question_least`; beside its non-text parts, a screenshot never cut,
   them and half the room they leave its text): the summaries are merged smaller, else cut to their
   head and tail (`cut_summaries`), audited, or left out before it goes under that;
   shrinking them, the tool outputs after the question count at what the last resort can
   outline them to (half the room the rest leaves the two), so an outline of the newest `cat`
   does not take the room of the summary holding the task; a side of the question whose one
   chunk cannot be made smaller stays as it is, the other side shrinks for it;
   a newest call long by its arguments has them outlined first (judged beside the question
   at the shortest the last resort makes it and the summaries, at a quarter of the budget at
   most), so the call, its result and the summaries are kept; a
   shortened output names the errors, tests and files of its cut part; what it shortens
   keeps the same text on later turns (the newest question's cut while the budget does not
   grow and the question stays alike: its parts the same, `alike_prefix`).
6. Restored messages come back whole, after the summaries, and stay for the conversation;
   each restore is audited once.
7. cache_reuse_tokens: the tokens of the leading messages identical to the previous result.
   Breakpoints (when the client set none): the end of the system messages, the end of the
   summaries and the messages shown whole after them, the end of the result.
8. Facts ahead of need: `warm(state, budget)`, called between requests once the next step is
   near (`near_budget`: the result passed `precompact_at` of its budget, or one more request
   as big as the biggest of its last few would pass the budget), reads the facts of the messages the next step will
   summarize into the state, so that step on the request path reads none (the text of a
   chunk is the same either way).
9. Summaries ahead of need: `summary_ahead(state, budget)` says, once the step is near, which
   messages the next summary step is expected to take (its walk on the first request past the
   budget, the conversation growing as its last turn did) and how long their decided / open
   part may be; a model's answer,
   kept by `take_summary` (an empty or off-topic one refused, as ctx/summarize answers are),
   is that part of the chunk of a step that takes exactly those messages, unchanged; the
   constraints, action log and ledger beside it are made as for any chunk, so a fact it left
   out is still there. Given the summarizing model's window, what it is shown is fitted to it
   (the oldest messages as their offline summary: `summaries.fit_shown`). Any other step (or none kept) writes the offline text, and a chunk's
   audit says who wrote it.
10. The notice says what this turn summarized, outlined, cut or restored (and who wrote a
   summary not written offline); None when it did nothing new.
11. The newest tool loop, when its first step carries the turn's thinking and a later step
   does not (Claude without interleaved thinking), is one assistant turn that must open with
   that thinking: the first step is never summarized (its calls' long arguments and its
   results outlined as any, its thinking never changed) and the last resort pins it, its
   results held at their size beside the newest output; a summary of the steps between, which
   would follow a tool result as a user text and open a new turn, is read inside that tool
   result, after its text (`held.py`).
Pinned content alone over the budget raises ContextError("pinned_over_budget").
"""

from __future__ import annotations

from ctxlayer.core.prepare.engine import (
    SummaryAsk,
    may_refit,
    near_budget,
    prepare_turn,
    summary_ahead,
    take_summary,
    warm,
)
from ctxlayer.core.prepare.model import (
    DEFAULT_POLICY,
    Ahead,
    Chunk,
    ConversationState,
    PreparePolicy,
    Turn,
)
from ctxlayer.core.prepare.told import audit_of, left_out, shown_shortened, told_anew

__all__ = ["DEFAULT_POLICY", "Ahead", "Chunk", "ConversationState", "PreparePolicy",
           "SummaryAsk", "Turn", "audit_of", "left_out", "may_refit", "near_budget",
           "prepare_turn", "shown_shortened", "summary_ahead", "take_summary", "told_anew",
           "warm"]
