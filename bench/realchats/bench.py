"""Compaction judged on real coding-agent transcripts: what the rest of the conversation needs.

    .venv/bin/python bench/realchats/bench.py [--set dev|heldout|all] [--no-peers]
        [--budgets 25,10] [--replay]

Each transcript of the set (dev: data/, the SWE-agent and mini-swe-agent transcripts the engine
is tuned on, see data/SOURCE.md; heldout: heldout/, other agents' transcripts it was never tuned
on, see heldout/SOURCE.md; all: both) is cut where 80% of its tokens are behind: the part before
the cut is what a context engine is given, the part after is what the conversation went on to
do. "Needed facts" are the paths, commands, test names, error
names and line numbers of the part before the cut that the part after uses again (needed.py,
its own regexes, not ctxlayer's extractor). Each trimmer fits the part before the cut into a
budget of the system prompt plus 25% (then 10%) of the rest of its tokens; the score is the
share of needed facts whose exact text is in what it kept, over all transcripts (and the same
with the line facts aside: "line 57" counts as kept wherever any file's line 57 is shown), and
the budget it used. Side by side, in one run, o200k counts:
- ctxlayer ctx/assemble (the core's assembly, offline summary: no model);
- ctxlayer ctx/prepare (core.prepare, the gateway's path): the chat replayed request by request
  (the whole conversation before each assistant turn), the last request scored;
- ctxlayer ctx/trim (core.trim, pipeline strategy);
- newest-first: the system prompt, then the newest whole messages that fit;
and whether each window is one the providers accept (a user turn first after the system
prompt, no tool result without its call, no call without its results) and still holds the
newest user message (its first words: shortened is fine);
- LangChain trim_messages(strategy="last") and gptme reduce_log + limit_log, each in its own
  venv (bench/peers.py; skipped with --no-peers or when that venv cannot be built).
``--replay`` instead replays every request of each transcript through ctx/prepare beside a
newest-first tail and sending everything (replay.py says what it reports).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from load import SETS, agents, transcripts  # noqa: E402
from needed import KINDS, kept, needed  # noqa: E402

from ctxlayer.core.assembly import Compaction, History, assemble  # noqa: E402
from ctxlayer.core.assembly.assemble import AssemblyInput  # noqa: E402
from ctxlayer.core.prepare import prepare_turn  # noqa: E402
from ctxlayer.core.tokens import conversation_tokens, message_tokens  # noqa: E402
from ctxlayer.core.trim import trim  # noqa: E402
from ctxlayer.core.zones import DEFAULT_MODES  # noqa: E402
from ctxlayer.protocol import Message  # noqa: E402
from ctxlayer.tokenizers import counter_for  # noqa: E402

#: where a transcript is cut, as the share of its tokens before the cut: the README's figures
CUT = 0.8


def cut(messages: list[Message], counter, share: float = CUT) -> int:
    """Index of the first message after the cut: ``share`` of the tokens before it, and the
    part after starting at an assistant turn (what the agent did next)."""
    tokens = [message_tokens(m, counter) for m in messages]
    total, run = sum(tokens), 0
    for i, t in enumerate(tokens):
        run += t
        if run >= share * total:
            j = i + 1
            while j < len(messages) and messages[j].role != "assistant":
                j += 1
            return min(j, len(messages) - 1)
    return len(messages) - 1


def provider_valid(context: list[Message]) -> bool:
    """What both providers accept: after the system messages a user turn first; every tool
    result after the call it answers, every call with its results."""
    rest = [m for m in context if m.role != "system"]
    if not rest or rest[0].role != "user":
        return False
    calls: set[str] = set()
    answered: set[str] = set()
    for m in rest:
        if m.role == "tool":
            if m.tool_call_id not in calls:
                return False
            answered.add(m.tool_call_id)
        calls.update(c.id for c in m.tool_calls or ())
    return calls <= answered


def question_kept(before: list[Message], context: list[Message]) -> bool:
    """Whether the newest user message is still there, at least its first words (shortened
    is fine, left out is not)."""
    ask = next((m for m in reversed(before) if m.role == "user"), None)
    if ask is None:
        return True
    head = " ".join(ask.content.split())[:40]
    return head in " ".join(" ".join(m.content.split()) for m in context)


def ours_assemble(before: list[Message], budget: int, counter) -> list[Message]:
    system = [m for m in before if m.role == "system"]
    history = History()
    for k, m in enumerate(m for m in before if m.role != "system"):
        history.append(m, k, message_tokens(m, counter))
    inp = AssemblyInput(budget=budget, mode="deep", mode_spec=DEFAULT_MODES["deep"],
                        system=system)
    return assemble(history, Compaction(), inp, counter).result.messages


def ours_prepare(before: list[Message], budget: int, counter) -> list[Message]:
    """A live chat through ctx/prepare (the gateway's path): the client resends the whole
    conversation before each assistant turn; the window of the last request is scored."""
    state = None
    ends = [k for k in range(1, len(before)) if before[k].role == "assistant"] + [len(before)]
    turn = None
    for end in ends:
        turn = prepare_turn(state, before[:end], budget, counter)
        state = turn.state
    return turn.messages


def ours_trim(before: list[Message], budget: int, counter) -> list[Message]:
    return trim(before, budget, counter).messages


def newest_first(before: list[Message], budget: int, counter) -> list[Message]:
    system = [m for m in before if m.role == "system"]
    used = 3 + sum(message_tokens(m, counter) for m in system)
    out: list[Message] = []
    for m in reversed([m for m in before if m.role != "system"]):
        cost = message_tokens(m, counter)
        if used + cost > budget:
            break
        out.append(m)
        used += cost
    return system + out[::-1]


def peer(driver: str):
    import peers

    def run(before: list[Message], budget: int, counter) -> list[Message]:
        res = peers.run_peer(driver, before, model="gpt-4o", encoding="o200k_base",
                             window=budget, runs=1)
        if res["error"]:
            raise RuntimeError(res["error"])
        return peers.kept(before, res["messages"])

    return run


def percents(text: str) -> list[int] | None:
    """"25,10" as [25, 10]; None unless every item is a whole percent from 1 to 100."""
    items = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() and 1 <= int(p) <= 100 for p in items):
        return None
    return [int(p) for p in items]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--budgets", default="25,10",
                    help="percent of each transcript's tokens before the cut, comma-separated")
    ap.add_argument("--replay", action="store_true",
                    help="replay each transcript request by request (replay.py) instead")
    ap.add_argument("--detail", action="store_true",
                    help="with --replay: a row per transcript, highest bill first")
    ap.add_argument("--set", default="dev", choices=list(SETS),
                    help="dev: the transcripts the engine is tuned on; heldout: never tuned on")
    ap.add_argument("--cut", type=float, default=CUT,
                    help="the share of each transcript's tokens before the cut (0.6 and 0.7 "
                         "check that a change helps more than the one point the figures use)")
    args = ap.parse_args()
    if not 0 < args.cut < 1:
        ap.error(f"--cut: a share between 0 and 1, not {args.cut}")
    budgets = percents(args.budgets)
    if budgets is None:
        ap.error(f"--budgets: whole percents between 1 and 100 such as 25,10, not {args.budgets!r}")
    counter = counter_for("gpt-4o")
    methods = [("ctxlayer ctx/assemble (offline summary)", ours_assemble),
               ("ctxlayer ctx/prepare (live chat, turn by turn)", ours_prepare),
               ("ctxlayer ctx/trim (pipeline)", ours_trim),
               ("newest-first tail", newest_first)]
    notes: list[str] = []
    if not args.no_peers and not args.replay:
        try:
            import peers

            peers.ensure_venv()
            methods += [("LangChain trim_messages(last)", peer("peer_langchain.py")),
                        ("gptme reduce_log + limit_log", peer("peer_gptme.py"))]
        except Exception as exc:  # the registry or the venv is unavailable: report without
            notes.append(f"peers skipped: {exc}")
    chats = []
    for name, msgs in transcripts(args.set):
        at = cut(msgs, counter, args.cut)
        before, after = msgs[:at], msgs[at:]
        needs = needed(before, after)
        system = sum(message_tokens(m, counter) for m in before if m.role == "system")
        rest = conversation_tokens(before, counter) - system
        chats.append((name, before, needs, system, rest))
    n_needed = sum(len(c[2]) for c in chats)
    if args.replay:
        import replay

        print(f"set {args.set}: {len(chats)} transcripts of {', '.join(agents(args.set))}, "
              f"cut at {args.cut:.0%} of their tokens; {n_needed} needed facts; o200k\n")
        replay.report(chats, budgets, counter,
                      (provider_valid, question_kept, ours_assemble, newest_first),
                      lambda needs, window: len(kept(needs, window)), args.detail)
        return
    by_kind = {k: sum(1 for c in chats for f in c[2] if f[0] == k) for k in KINDS}
    print(f"set {args.set}: {len(chats)} transcripts of {', '.join(agents(args.set))}, cut at "
          f"{args.cut:.0%} of their tokens; {n_needed} needed facts ("
          + ", ".join(f"{v} {k}s" for k, v in by_kind.items()) + "); o200k\n")
    for pct in budgets:
        print(f"budget: system prompt + {pct}% of the rest of the tokens before the cut\n")
        print("| trimmer | needed facts kept | lines aside | " + " | ".join(KINDS)
              + " | budget used (median) | provider-valid windows | question kept "
              "| transcripts failed |")
        print("|---|---|---|" + "---|" * len(KINDS) + "---|---|---|---|")
        for label, fn in methods:
            found = 0
            kinds = dict.fromkeys(KINDS, 0)
            used: list[float] = []
            failed = valid = asked = 0
            for name, before, needs, system, rest in chats:
                budget = 3 + system + int(rest * pct / 100)
                try:
                    context = fn(before, budget, counter)
                except Exception as exc:
                    failed += 1
                    notes.append(f"{label}, {name}, {pct}%: {type(exc).__name__}: {exc}"[:200])
                    continue
                got = kept(needs, context)
                found += len(got)
                for kind, _ in got:
                    kinds[kind] += 1
                used.append(conversation_tokens(context, counter) / budget)
                valid += provider_valid(context)
                asked += question_kept(before, context)
            share = 100 * found / max(1, n_needed)
            # a "line N" fact is kept by any window that shows line N of any file: the score
            # without them says what a window kept for sure
            sure, of = found - kinds["line"], n_needed - by_kind["line"]
            cells = " | ".join(f"{kinds[k]}/{by_kind[k]}" for k in KINDS)
            med = sorted(used)[len(used) // 2] if used else 0.0
            print(f"| {label} | {found}/{n_needed} = {share:.1f}% "
                  f"| {sure}/{of} = {100 * sure / max(1, of):.1f}% | {cells} | {100 * med:.0f}% "
                  f"| {valid}/{len(chats) - failed} | {asked}/{len(chats) - failed} | {failed} |")
        print()
    if notes:
        print("\n".join(f"- {n}" for n in notes))


if __name__ == "__main__":
    main()
