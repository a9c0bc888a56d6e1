"""The priority strategy: retrieved documents capped in number and size,
then P3 documents cut first, then P2 older history (repeated and old prose condensed, the
longest shortened, then the oldest dropped), then P1 recent messages; P0 never.
"""

from __future__ import annotations

from ctxlayer.core.compress.density import NEW_ABOVE, REPEATED_BELOW, NoveltyIndex
from ctxlayer.core.compress.extractive import KEEP_RATIO, TaskKind, classify_task
from ctxlayer.core.trim.fit import Shortener, fit_fixed, fixed_set, shorten_longest
from ctxlayer.core.trim.truncate import cut_lines
from ctxlayer.core.trim.work import Work
from ctxlayer.protocol import Message


def _task(w: Work) -> tuple[TaskKind, tuple[str, ...]]:
    """The task the latest user message asks for, and its significant words: they decide how much
    prose is kept and which sentences score."""
    latest = next((w.content[i] for i in range(len(w.msgs) - 1, -1, -1)
                   if w.msgs[i].role == "user" and w.alive[i]), "")
    words = tuple(sorted({t for t in latest.replace("`", " ").split() if len(t) >= 5})[:50])
    return classify_task(latest), words


def condense_history(w: Work, candidates: list[int], over: int, sh: Shortener) -> int:
    """Density, then extractive compression, on older history: messages that mostly repeat
    what came before (novelty below REPEATED_BELOW) are condensed first, then any prose that is
    not new information (novelty up to NEW_ABOVE), oldest first; new information is left whole."""
    if over <= 0 or not candidates:
        return over
    kind, words = _task(w)
    ratio = KEEP_RATIO[kind]
    index, novelty = NoveltyIndex(), {}
    wanted = set(candidates)
    for i in range(len(w.msgs)):
        if w.alive[i]:
            n = index.observe(w.content[i])
            if i in wanted:
                novelty[i] = n
    for limit, why in ((REPEATED_BELOW, "mostly repeats earlier context"),
                       (NEW_ABOVE, f"older prose, {kind} task")):
        for i in candidates:
            if over <= 0:
                return over
            if w.alive[i] and novelty.get(i, 1.0) < limit:
                over -= sh.condense(i, ratio, words, f"{why} (novelty {novelty[i]:.2f})")
    return over


def priority_fit(w: Work, budget: int, sh: Shortener, recent: int) -> None:
    """Cut P3 (documents) first, then P2 (older history: condense repeated and old prose,
    shorten the longest, then drop oldest), then P1 (recent: shorten, then drop oldest); P0
    (system, pinned) never."""
    fixed = fixed_set(w, every_system=True)
    fit_fixed(w, fixed, budget, sh)
    classes: dict[int, list[int]] = {1: [], 2: [], 3: []}
    seen_recent = 0
    for i in range(len(w.msgs) - 1, -1, -1):
        if i in fixed or not w.alive[i]:
            seen_recent += i == w.question  # the question is recent even though it is kept
            continue
        m = w.msgs[i]
        if m.priority is not None and m.priority in classes:
            cls = m.priority
        elif m.kind == "doc":
            cls = 3
        else:
            cls = 1 if seen_recent < recent else 2
            seen_recent += 1
        classes[cls].append(i)
    # a group takes the most important class of its members, and every member goes with it
    # (a call's output placed in P2 beside its P1 result was in no class: never shortened,
    # its 12k-token group dropped whole from a 10k budget)
    best: dict[int, int] = {}
    for cls in (1, 2, 3):
        for i in classes[cls]:
            best.setdefault(w.group[i], cls)
    members = [i for cls in (1, 2, 3) for i in classes[cls]]
    for cls in (1, 2, 3):
        classes[cls] = sorted(i for i in members if best[w.group[i]] == cls)

    def over() -> int:
        return w.total - budget

    # P3: least relevant (last given) documents go first
    for i in reversed(classes[3]):
        if over() <= 0:
            return
        w.drop_group(i, "over budget: retrieved document (P3) cut first")
    if over() <= 0:
        return
    # P2: condense repeated and old prose, shorten the longest
    condense_history(w, classes[2], over(), sh)
    shorten_longest(w, classes[2], over(), sh)
    if over() <= 0:
        return
    # P1 is shortened only when it does not fit even with every P2 message gone
    p2 = sum(w.group_tokens(g) for g in _groups(w, classes[2]))
    shorten_longest(w, classes[1], over() - p2, sh)
    _allocate(w, budget, [(classes[1], "recent (P1)"), (classes[2], "older history (P2)"),
                          (classes[3], "retrieved document (P3)")])


def _groups(w: Work, members: list[int]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i in members:
        if w.alive[i]:
            groups.setdefault(w.group[i], []).append(i)
    return groups


def _allocate(w: Work, budget: int, classes: list[tuple[list[int], str]]) -> None:
    """Give the room left beside the fixed set to the classes in order (so a lower class is cut
    first), each filled by whole groups newest first, a group that does not fit skipped so
    that an older, smaller one still gets the room: the budget is filled, not merely met."""
    by_class = [(_groups(w, members), what) for members, what in classes]
    room = budget - (w.total - sum(w.group_tokens(g) for groups, _ in by_class for g in groups))
    for groups, what in by_class:
        for g in sorted(groups, reverse=True):
            cost = w.group_tokens(g)
            if cost <= room:
                room -= cost
            else:
                w.drop_group(groups[g][0], f"over budget: {what}, {cost} tokens, "
                                           f"{max(room, 0)} left")


def _doc(m: Message) -> bool:
    return m.kind == "doc"


def cap_docs(w: Work, budget: int, max_count: int, item_share: float) -> None:
    """Retrieved documents are capped in number and in size per item, so retrieval never
    fills the pool before history."""
    cap = max(1, int(budget * item_share))
    docs = [i for i in w.where("docs", _doc) if w.alive[i] and not w.msgs[i].pinned]
    for rank, i in enumerate(docs):
        if rank >= max_count:
            w.drop(i, f"retrieval cap: only {max_count} documents per request")
            continue
        body = w.tokens[i] - w.extra[i]
        if body > cap:
            text = w.content[i]
            lines = text.count("\n") + 1
            keep = max(2, lines * cap // body // 2)
            cut = cut_lines(text, keep, keep)
            while cut != text and w.counter.count(cut) > cap and keep > 1:
                keep //= 2
                cut = cut_lines(text, keep, keep)
            if w.counter.count(cut) > cap:  # one huge line: cut by characters
                cut = text[: max(1, len(text) * cap // body // 2)] + " [...]"
            w.replace(i, cut, "truncated", f"retrieval cap: {cap} tokens per document")
