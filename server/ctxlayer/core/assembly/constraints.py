"""The user's hard constraints: which ones a summary keeps verbatim, and which give way.

Two sources, both from user messages only:
- marked by the user: a user message with ``pinned`` set (or ``kind`` "rule") is one hard
  constraint, its whole text, whatever its wording;
- the user's imperatives, sentence by sentence, detected precisely: an order that starts with
  "never", "always", "do not", "only", "make sure", "target", "stick to"..., or a sentence whose
  subject is told what it "must" / "must not" / "shall" do, or that is "not allowed",
  "forbidden", "required", or a clause after a semicolon or a comma that opens with "never",
  "do not", "must not" ("...; never drop the invoices table"). Questions are not orders, and
  neither is what the user says of themselves ("I don't understand why test_3 fails").

Constraints are kept verbatim in every summary up to a share of the history budget; the rest are
demoted to the facts ledger (and audited), so many constraints can never make a session
impossible to assemble. The marked ones are kept first, then the newest detected ones.
Must not: call a model, count tokens other than through the injected counter.
"""

from __future__ import annotations

import re

from ctxlayer.core.assembly.instructions import as_said
from ctxlayer.core.text import normalized_hash
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import Message

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")

# words an order may be introduced with: "Please never...", "Also, only touch..."
_LEAD = (r"^\W*(?:(?:please|also|and|but|so|remember|important|note|reminder|again|just|"
         r"from now on|going forward|in this task|for this task|then)\b[\s,:;!-]*)*")
_ORDER_START = re.compile(
    _LEAD + r"(?:never|always|do\s+not|don't|dont|only|avoid|keep|make\s+sure|ensure|"
    r"stick\s+to|stay\s+(?:on|with|within)|target|limit\s+\w+\s+to|refrain\s+from|"
    r"no\s+more\s+than|under\s+no\s+circumstances|at\s+all\s+times|use\s+only|must|"
    r"you\s+(?:must|should\s+never|may\s+not|are\s+not\s+allowed))\b",
    re.IGNORECASE,
)
# an order addressed to a subject: "the public API must stay", "tests shall not..."
_MODAL = re.compile(
    r"\b(?:must(?:\s+not|\s+never)?|mustn't|shall(?:\s+not)?|shan't|should\s+never|"
    r"(?:is|are)\s+(?:not\s+allowed|forbidden|required|prohibited|mandatory)|"
    r"not\s+allowed\s+to|under\s+no\s+circumstances|at\s+all\s+times)\b",
    re.IGNORECASE,
)
#: an order opening a clause after a semicolon or a comma ("Migrate to Postgres; never drop the
#: invoices table.", "Refactor it, do not touch the API"): only the words that are orders
#: wherever they stand, before a verb's plain form. Not what the user says of themselves or of
#: the code: "never mind", "don't know", "don't have time", "don't like it" (the user's own
#: state), "never worked", "never reproduces", "never raises" (a past or a third person's
#: verb: the code described), "never during office hours", "never on reload" (no verb), "Our
#: users, never patient, complain" (a word set apart by commas)
_CLAUSE_ORDER = re.compile(
    r"[;,]\s*(?:(?:and|but|so|please|also|just)\s+)*(?:never|do\s+not|don't|dont|must\s+not|"
    r"under\s+no\s+circumstances)\s+(?!(?:mind|know|knew|think|thought|understand|see|seen|"
    r"remember|care|worry|been|was|were|had|did|got|get|seem|really|even|tried|have|like|"
    r"love|hate|want|need|feel|believe|agree|mean|recall|expect|trust|again|once|twice|"
    r"during|with|without|on|in|at|for|from|by|before|after|until|since|to|the|a|an|any|"
    r"anything|anyone|that|this|more|less|enough|quite|very|so|too|always|ever|yet)\b)"
    r"(?![a-z]*(?:[^e\W]ed|ing|[^s\W']s)\b)(?![a-z']+\s*,)[a-z]",
    re.IGNORECASE,
)
# what the user says about themselves or asks
_FIRST_PERSON = re.compile(r"^\W*(?:i|i'm|i've|i'd|im|my)\b", re.IGNORECASE)
_WANT = re.compile(r"^\W*i\s+(?:want|need|require)\s+(?:you\s+to|that|the|it|all|every)\b",
                   re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^\W*(?:why|how|what|when|where|which|who|whose|can|could|would|will|is|are|was|were|"
    r"does|did|do\s+(?:you|we|i|they)|have|has|should\s+(?:i|we))\b",
    re.IGNORECASE,
)
_ZH_ORDER = re.compile(r"必须|禁止|不要|不得|务必|一律|只能|不可|不准")
_ZH_SELF = re.compile(r"^\W*我(?:不|没)")

#: every order contains one of these words (lowercased): a message without any is not split
_CUE_WORDS = frozenset(
    "never always not don't dont only avoid keep sure ensure stick stay target limit refrain "
    "more circumstances times must mustn't shall shan't forbidden required prohibited "
    "mandatory allowed want need require".split())
_CUE_CJK = ("必须", "禁止", "不要", "不得", "务必", "一律", "只能", "不可", "不准")
_ASCII_WORD = re.compile(r"[a-z']+")


def _has_cue(text: str) -> bool:
    lowered = text.lower()
    if not lowered.isascii() and any(c in lowered for c in _CUE_CJK):
        return True
    return not _CUE_WORDS.isdisjoint(_ASCII_WORD.findall(lowered))


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def sentences(text: str) -> list[str]:
    """Sentences split at . ! ? followed by a space, at 。！？ and at line ends, list bullets
    removed."""
    out = (_BULLET.sub("", s).strip() for s in _SENTENCE_END.split(text))
    return [s for s in out if len(s) > 3]


def is_order(sentence: str) -> bool:
    """Whether one sentence is the user's imperative (see the module docstring)."""
    s = sentence.strip()
    if not s or s.endswith(("?", "？")) or _QUESTION_START.match(s):
        return False
    if _ZH_ORDER.search(s):
        return not _ZH_SELF.match(s)
    if _WANT.match(s):
        return True
    if _CLAUSE_ORDER.search(s):  # an order after what the user says of themselves, too
        return True
    if _FIRST_PERSON.match(s):
        return False
    return bool(_ORDER_START.match(s) or _MODAL.search(s))


def is_marked(msg: Message) -> bool:
    """A user message the user marked as a hard constraint."""
    return msg.role == "user" and (msg.pinned or msg.kind == "rule")


#: the words Claude Code wraps around the context it injects (`<system-reminder>`: the user's
#: CLAUDE.md, git status): its own, not the user's. The CLAUDE.md inside is the user's and
#: its orders stay ("Always run make test-all before committing."); these were kept beside
#: them as the user's hard constraints, verbatim
CLIENT_FRAMING = ("IMPORTANT: These instructions OVERRIDE any default behavior",
                  "Codebase and user instructions are shown below.",
                  "Be sure to adhere to these instructions.",
                  "IMPORTANT: this context may or may not be relevant to your tasks.",
                  "You should not respond to this context unless it is highly relevant")


def orders_of(msg: Message) -> list[str]:
    """The user's hard constraints in one message (its whole text when it is marked)."""
    if msg.role != "user" or msg.kind in ("summary", "toolOutput", "doc"):
        return []
    if is_marked(msg):
        flat = " ".join(msg.content.split())
        return [flat] if flat else []
    if not _has_cue(msg.content):
        return []
    framed = "<system-reminder>" in msg.content
    # the instruction files a reminder carries, not the client's own reminders around them
    text = as_said(msg.content) if framed else msg.content
    orders = [" ".join(s.split()) for s in sentences(text) if is_order(s)]
    if framed:
        orders = [o for o in orders if not o.startswith(CLIENT_FRAMING)]
    return orders


def detect(messages: list[Message], previous: list[str] = (), marked: list[str] = (),
           found: list[list[str]] | None = None) -> tuple[list[str], list[str]]:
    """(constraints, marked) after ``messages``: previous ones first, duplicates removed.
    ``found``: ``orders_of`` of each message, when the caller has them already."""
    seen = {normalized_hash(c.lower()) for c in previous}
    out = list(previous)
    marks = list(marked)
    for k, msg in enumerate(messages):
        orders = found[k] if found is not None else orders_of(msg)
        for flat in orders:
            key = normalized_hash(flat.lower())
            if key not in seen:
                seen.add(key)
                out.append(flat)
                if is_marked(msg):
                    marks.append(flat)
    return out, marks


def split(constraints: list[str], marked: list[str], cap_tokens: int,
          counter: Tokenizer) -> tuple[list[str], list[str]]:
    """(kept verbatim, demoted) within ``cap_tokens``: marked first, then the newest; each
    list in the order the user gave them."""
    marks = set(marked)
    order = [c for c in reversed(constraints) if c in marks]
    order += [c for c in reversed(constraints) if c not in marks]
    kept: set[str] = set()
    used = 0
    for c in order:
        cost = counter.count(c) + 2
        if used + cost <= cap_tokens:
            kept.add(c)
            used += cost
    return ([c for c in constraints if c in kept], [c for c in constraints if c not in kept])
