"""The live path replayed: each transcript sent request by request, the way an agent loop
resends its whole history before each assistant turn, through ``ctx/prepare`` (core.prepare,
the gateway's path), beside a newest-first tail and sending everything, in one run.

    .venv/bin/python bench/realchats/bench.py --replay [--set dev|heldout|all] [--budgets 25,10]
        [--detail]

The budget of every request of a transcript is the one bench.py scores: the system prompt plus
a share of the rest of the tokens before the cut. Per method and budget it reports:
- facts: needed facts kept by the final request (needed.py, not ctxlayer's extractor), and
  ``ctx/assemble``'s on the same window for comparison;
- budget use once over budget: of the requests whose whole history is over the budget, the
  tokens sent as a share of the budget, mean and lowest;
- reuse: of those requests, the tokens of the leading messages identical to the previous
  request, as a share of the previous request (token-weighted);
- bill: what a provider with prompt caching charges for the input of every request (the prefix
  identical to the previous request read at 0.1x, the rest written at 1.25x), against sending
  everything (every request the whole history, an append-only prefix) on the same requests; the
  mean ratio over transcripts and on how many it is above 1;
- p50 / p99 of the time ``ctx/prepare`` takes per request (the engine alone, counts included;
  between requests the facts the next step needs are read ahead, as the daemon does after it
  answered, outside the time);
- two bounds on reuse and bill: at prepare's own request sizes (``oracle``), and at any request
  sizes within the budget for a method that sends the new messages whole (``any_method``; a
  reuse target above it is out of every such method's reach);
- requests over budget, windows a provider refuses (a user turn first, no call without its
  results, no result without its call), and windows without the newest user message.
With ``--detail``, a row per transcript too, highest bill first: its budget, the system prompt's
share of it, the requests over budget, what the new messages of such a request take of the
budget as sent, and the bill of prepare, of the at-best bound and of the tail; then where
prepare's reuse was lost: what the first message of the previous request that a request did
not repeat became (a chunk rewritten, a new chunk, an outline, the question shortened), how
many requests, the tokens not reused, and what writing them again cost of prepare's bill.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ctxlayer.core.prepare import prepare_turn, warm
from ctxlayer.core.prepare.fit import result_index
from ctxlayer.core.tokens import message_tokens
from ctxlayer.protocol import Message

READ, WRITE = 0.1, 1.25  # cache read and cache write prices, as a share of the input price


@dataclass
class Tally:
    """One method's figures over a set at one budget."""

    used: list[float] = field(default_factory=list)
    reused: int = 0
    reusable: int = 0
    bills: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    over: int = 0
    invalid: int = 0
    no_question: int = 0
    requests: int = 0


def requests_of(before: list[Message]) -> list[int]:
    """Where each request of the agent loop ends: before each assistant turn, then the whole."""
    return [k for k in range(1, len(before)) if before[k].role == "assistant"] + [len(before)]


def unaudited(turn, told: set[int]) -> list[int]:
    """The messages (conversation indices) ``turn`` did not send as it came that no audit of it
    or of an earlier turn named: ``told`` holds the earlier turns' and takes this one's."""
    told.update(e.index for e in (*turn.dropped, *turn.truncated, *turn.restored)
                if e.index is not None)
    whole = {k for k in turn.state.out_keys if isinstance(k, int)}
    return [i for i in range(len(turn.state.messages)) if i not in whole and i not in told]


def prefix_tokens(prev: list[Message], cur: list[Message], tokens: list[int]) -> int:
    """Tokens of the leading messages of ``prev`` that ``cur`` repeats exactly."""
    k, m = 0, min(len(prev), len(cur))
    while k < m and prev[k] == cur[k]:
        k += 1
    return sum(tokens[:k])


def bill(windows: list[tuple[list[Message], list[int]]]) -> float:
    total, prev, prev_tokens = 0.0, [], []
    for msgs, toks in windows:
        hit = prefix_tokens(prev, msgs, prev_tokens) if prev else 0
        total += READ * hit + WRITE * (sum(toks) - hit)
        prev, prev_tokens = msgs, toks
    return total


def oracle(windows: list[tuple[list[Message], list[int]]], new_tokens: list[int],
           over: list[bool]) -> tuple[int, int, float]:
    """What a request of the same size as each of ``windows`` could reuse at best: all of the
    previous request but the room the new messages need (``new_tokens[k]``: what they take in
    that request, as sent). Returns (reused, reusable over the requests once over budget, as the tally counts
    them, and the bill of every request): no method
    that sends requests of these sizes reuses more or bills less, so a target above it asks
    for a smaller request, not a better step."""
    reused = reusable = 0
    total, prev = 0.0, None
    for (_, toks), new, past in zip(windows, new_tokens, over, strict=True):
        size = sum(toks)
        if prev is None:
            total += WRITE * size
        else:
            best = max(0, min(prev, size - min(new, size)))
            if past:
                reused, reusable = reused + best, reusable + prev
            total += READ * best + WRITE * (size - best)
        prev = size
    return reused, reusable, total


def any_method(full: list[tuple[list[Message], list[int]]], over: list[bool], budget: int,
               system: int) -> tuple[int, int]:
    """The reuse no method can pass on one transcript, whatever its request sizes, if it sends
    each request's new messages whole whenever they fit beside the system prompt: (most
    reusable tokens, fewest previous-request tokens), summed over transcripts by the caller.

    Over the requests once over budget (a run: the history only grows), a request of size S_k
    reuses at most S_k - n_k of the one before (n_k: its new messages), so the reuse column's
    sums are at most sum(S_k) - sum(n_k) against sum(S_k) - S_last + S_first_before >=
    sum(S_k) - budget. With every S_k <= budget, that ratio is largest when every request is the
    whole budget: (N * budget - sum(n_k)) / ((N - 1) * budget). New messages too big to fit
    count as 0 (a method must cut them, and could cut them to almost nothing)."""
    n = count = 0
    for k in range(1, len(full)):
        if over[k]:
            new = sum(full[k][1][len(full[k - 1][0]):])
            n += new if 3 + system + new <= budget else 0
            count += 1
    return count * budget - n, max(0, count - 1) * budget


def replay(before: list[Message], budget: int, counter, tail_window) -> dict[str, tuple]:
    """Every request of one transcript through each method: {method: (windows, latencies,
    over_budget_flags)}; ``tail_window(history, budget, counter)`` is the newest-first tail."""
    out: dict[str, tuple] = {}
    state = None
    prep, lat, over, sent_new, prev_end = [], [], [], [], 0
    for end in requests_of(before):
        history = before[:end]
        t0 = time.perf_counter()
        turn = prepare_turn(state, history, budget, counter)
        lat.append(time.perf_counter() - t0)
        # between requests, as the daemon does after answering: facts read ahead of need
        state = warm(turn.state, budget) or turn.state
        prep.append((turn.messages, list(turn.state.out_tokens)))
        # the tokens the new messages take in the result, as sent (shortened or whole)
        start = prev_end
        sent_new.append(sum(t for key, t in zip(turn.state.out_keys, turn.state.out_tokens,
                                                strict=True)
                            if (i := result_index(key)) is not None and i >= start))
        prev_end = end
        over.append(turn.state.cum[-1] + 3 > budget)
    out["ctxlayer ctx/prepare"] = (prep, lat, over)
    out["new"] = sent_new
    tail = []
    full = []
    for end in requests_of(before):
        history = before[:end]
        w = tail_window(history, budget, counter)
        tail.append((w, [message_tokens(m, counter) for m in w]))
        full.append((history, [message_tokens(m, counter) for m in history]))
    out["newest-first tail"] = (tail, [], over)
    out["sending everything"] = (full, [], over)
    return out


def tally(t: Tally, windows, latencies, over_flags, budget: int, full_bill: float,
          history_of, checks, send_all: bool) -> None:
    valid, asked = checks[0], checks[1]
    prev = None
    for k, ((msgs, toks), over) in enumerate(zip(windows, over_flags, strict=True)):
        t.requests += 1
        sent = 3 + sum(toks)
        if not send_all and sent > budget:
            t.over += 1
        if not valid(msgs):
            t.invalid += 1
        if not asked(history_of(k), msgs):
            t.no_question += 1
        if over:
            t.used.append(sent / budget)
            if prev is not None:
                t.reused += prefix_tokens(prev[0], msgs, prev[1])
                t.reusable += sum(prev[1])
        prev = (msgs, toks)
    t.latencies += latencies
    t.bills.append(bill(windows) / full_bill if full_bill else 1.0)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


@dataclass
class Row:
    """One transcript at one budget, for ``--detail``: what its bill comes from."""

    name: str
    budget: int
    system: int
    requests: int
    over: int
    new_share: float  # the new messages of a request over budget, as sent, per budget token
    bills: dict[str, float]  # method -> bill against sending everything

    def line(self) -> str:
        cells = " | ".join(f"{100 * b:.0f}%" for b in self.bills.values())
        return (f"| {self.name} | {self.budget:,} | {100 * self.system / self.budget:.0f}% "
                f"| {self.over} of {self.requests} | {100 * self.new_share:.1f}% | {cells} |")


def row_of(name: str, budget: int, system: int, new: list[int], over: list[bool],
           bills: dict[str, float]) -> Row:
    past = [t for t, o in zip(new, over, strict=True) if o]
    return Row(name, budget, system, len(over), len(past),
               sum(past) / len(past) / budget if past else 0.0, bills)


def break_of(prev: list[Message], cur: list[Message]) -> str:
    """What the first message of ``prev`` that ``cur`` does not repeat became: where the
    provider's cached prefix ended."""
    k, m = 0, min(len(prev), len(cur))
    while k < m and prev[k] == cur[k]:
        k += 1
    was = prev[k]
    now = cur[k] if k < len(cur) else None
    if was.kind == "summary":
        return "a summary chunk rewritten (merged, or shrunk to fit)"
    if now is not None and now.kind == "summary":
        return "a new summary chunk before messages kept whole"
    if now is not None and now.id == was.id:
        if was.role == "user":
            return "a user message shortened (the question, to make room)"
        return f"{'a tool output' if was.role == 'tool' else 'an assistant message'} outlined"
    return "a message dropped or moved"


def losses(windows, over_flags, new_tokens: list[int]) -> dict[str, list[float]]:
    """Per `break_of` kind, over the requests past the budget whose prefix moved: [how many,
    tokens of the previous request not reused (the reuse column's own sum), what they cost
    written again at WRITE beyond the new messages (``new_tokens[k]``, as sent)]."""
    out: dict[str, list[float]] = {}
    for k in range(1, len(windows)):
        (prev, toks), (cur, now) = windows[k - 1], windows[k]
        hit = prefix_tokens(prev, cur, toks)
        if over_flags[k] and hit < sum(toks):
            row = out.setdefault(break_of(prev, cur), [0, 0, 0.0])
            row[0] += 1
            row[1] += sum(toks) - hit
            row[2] += WRITE * max(0, sum(now) - hit - new_tokens[k])
    return out


def print_losses(lost: dict[str, list[float]], reusable: int, billed: float) -> None:
    """``billed``: what ctx/prepare's requests cost in all, in the bill's units."""
    print("| where the reuse of ctx/prepare was lost | requests | of the previous requests' "
          "tokens | written again, beyond the new messages: of the bill |")
    print("|---|---|---|---|")
    for why, (n, tokens, cost) in sorted(lost.items(), key=lambda kv: -kv[1][2]):
        print(f"| {why} | {n:.0f} | {100 * tokens / max(1, reusable):.1f}% "
              f"| {100 * cost / max(1.0, billed):.1f}% |")
    print()


def print_detail(rows: list[Row]) -> None:
    """Per transcript, those whose bill is highest first."""
    methods = list(rows[0].bills) if rows else []
    print("| transcript | budget | system prompt | requests over budget | new messages a "
          "request (of the budget) | " + " | ".join(f"bill: {m}" for m in methods) + " |")
    print("|---|---|---|---|---|" + "---|" * len(methods))
    for r in sorted(rows, key=lambda r: -next(iter(r.bills.values()))):
        print(r.line())
    print()


def report(chats, budgets: list[int], counter, checks, facts_of, detail: bool = False) -> None:
    """Print the replay table for each budget. ``chats``: (name, before, needs, system, rest);
    ``checks``: (provider_valid, question_kept, assemble, newest-first tail), bench.py's;
    ``facts_of(needs, window)`` scores a final window; ``detail``: a row per transcript too."""
    for share in budgets:
        print(f"replay: every request of the agent loop, budget system prompt + {share}% of the"
              " rest\n")
        print("| method | facts at the final request | budget use once over (mean / lowest) "
              "| reuse of the previous request | bill vs sending everything (mean / above it) "
              "| p50 / p99 per request | over budget | invalid | question missing |")
        print("|---|---|---|---|---|---|---|---|---|")
        tallies: dict[str, Tally] = {}
        found: dict[str, int] = {}
        n_needed = sum(len(c[2]) for c in chats)
        assemble_found = 0
        bound = Tally()  # the oracle at ctx/prepare's request sizes
        anyone = Tally()  # the bound at any request sizes (`any_method`)
        rows: list[Row] = []
        lost: dict[str, list[float]] = {}
        billed = 0.0
        for name, before, needs, system, rest in chats:
            budget = 3 + system + int(rest * share / 100)
            runs = replay(before, budget, counter, checks[3])
            ends = requests_of(before)
            full_bill = bill(runs["sending everything"][0])
            prep, _, over = runs["ctxlayer ctx/prepare"]
            new = runs.pop("new")
            r, r_of, b = oracle(prep, new, over)
            bound.reused, bound.reusable = bound.reused + r, bound.reusable + r_of
            bound.bills.append(b / full_bill if full_bill else 1.0)
            most, of = any_method(runs["sending everything"][0], over, budget, system)
            anyone.reused, anyone.reusable = anyone.reused + most, anyone.reusable + of
            prep_bill = bill(prep)
            if detail:
                billed += prep_bill
                for why, row in losses(prep, over, new).items():
                    have = lost.setdefault(why, [0, 0, 0.0])
                    lost[why] = [a + b for a, b in zip(have, row, strict=True)]
            if full_bill:
                rows.append(row_of(name, budget, system, new, over, {
                    "ctx/prepare": prep_bill / full_bill,
                    "at best": b / full_bill,
                    "newest-first tail": bill(runs["newest-first tail"][0]) / full_bill}))
            for method, (windows, lat, over) in runs.items():
                t = tallies.setdefault(method, Tally())
                tally(t, windows, lat, over, budget, full_bill,
                      lambda k, ends=ends, before=before: before[:ends[k]], checks,
                      method == "sending everything")
                found[method] = found.get(method, 0) + facts_of(needs, windows[-1][0])
            assemble_found += facts_of(needs, checks[2](before, budget, counter))
        for method, t in tallies.items():
            used = (f"{100 * sum(t.used) / len(t.used):.1f}% / {100 * min(t.used):.1f}%"
                    if t.used else "-")
            if method == "sending everything":
                used = "(not fitted)"
            reuse = f"{100 * t.reused / t.reusable:.1f}%" if t.reusable else "-"
            above = sum(1 for b in t.bills if b > 1.0 + 1e-9)
            bills = f"{100 * sum(t.bills) / len(t.bills):.1f}% / {above} of {len(t.bills)}"
            lat = (f"{1000 * pct(t.latencies, 0.5):.1f} / {1000 * pct(t.latencies, 0.99):.1f} ms"
                   if t.latencies else "-")
            print(f"| {method} | {found[method]}/{n_needed} = "
                  f"{100 * found[method] / max(1, n_needed):.1f}% | {used} | {reuse} | {bills} "
                  f"| {lat} | {t.over}/{t.requests} | {t.invalid} | {t.no_question} |")
        above = sum(1 for b in bound.bills if b > 1.0 + 1e-9)
        print(f"| (at best, at ctx/prepare's request sizes: all but the new messages' room "
              f"reused) | | | {100 * bound.reused / max(1, bound.reusable):.1f}% | "
              f"{100 * sum(bound.bills) / len(bound.bills):.1f}% / {above} of "
              f"{len(bound.bills)} | | | | |")
        most = min(1.0, anyone.reused / max(1, anyone.reusable))
        print(f"| (at most, at any request sizes within the budget, the new messages sent whole "
              f"when they fit) | | | {100 * most:.1f}% | | | | | |")
        print(f"| (ctx/assemble on the final request) | {assemble_found}/{n_needed} = "
              f"{100 * assemble_found / max(1, n_needed):.1f}% | | | | | | | |")
        print()
        if detail:
            print_detail(rows)
            print_losses(lost, tallies["ctxlayer ctx/prepare"].reusable, billed)
