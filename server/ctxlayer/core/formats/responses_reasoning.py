"""Which reasoning items of a Responses request the provider reads again, and so what they cost.

A `reasoning` item sent back carries the model's whole reasoning sealed in its
`encrypted_content`. The request's `reasoning.context` says which of them the provider renders
to the model: `all_turns`, or `current_turn` (only the items after the last user message: an
agent's whole tool loop). Left out or `auto`, the model decides, and the official SDK's
reference states it: the gpt-5.6 family keeps all turns, the models before it only the current
one. A name this table does not read (another provider's model behind the same API) is taken
as keeping them all, since counting what the provider drops only fits the request tighter,
while leaving out what it reads has it refused. Codex sends every turn's reasoning back and no
`reasoning.context`: on gpt-5.5 and before, all but the last turn's are dropped.

An item the provider reads costs its sealed size; one it drops costs the text of its summary
only (as a dropped Anthropic thinking block costs its text).
"""

from __future__ import annotations

import re

# gpt-<major>[.<minor>] (gpt-5.4, gpt-5.1-codex, gpt-4o); the o-series (o1, o3, o4-mini) and
# codex-mini came before gpt-5.6
_GPT = re.compile(r"(?<![a-z0-9])gpt-(\d+)(?:\.(\d+))?(?![\d.])")
_O_SERIES = re.compile(r"(?<![a-z0-9])(?:o[1-4](?:-(?:mini|pro|preview))?|codex-mini)(?![a-z0-9.])")

#: the first gpt version that keeps every turn's reasoning by default
KEEPS_EVERY_TURN = (5, 6)


def every_turn_read(payload: dict) -> bool:
    """Whether the provider reads the reasoning items of every earlier turn of this request."""
    reasoning = payload.get("reasoning")
    context = reasoning.get("context") if isinstance(reasoning, dict) else None
    if context in ("all_turns", "current_turn"):
        return context == "all_turns"
    model = payload.get("model")
    if not isinstance(model, str):
        return True
    name = model.lower()
    found = _GPT.search(name)
    if found is not None:
        return (int(found.group(1)), int(found.group(2) or 0)) >= KEEPS_EVERY_TURN
    return _O_SERIES.search(name) is None
