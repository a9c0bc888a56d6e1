"""Zones of a session's memory: rules (A), working items (B), task modes.

- rules.py: weights, the top-weight prefix, the cap of 12 and demotion, the imperative warning;
- working.py + references.py: heat decay per turn, compression, removal, reference reset;
- compact.py: the ~1/4 short form of a cooled item, structured facts kept;
- modes.py: short / deep / debug shares and caps, and the suggestion from trigger words.
Pure: no I/O, no clocks; every default is configurable by the caller.
"""

from ctxlayer.core.zones.modes import DEFAULT_MODES, ModeSpec, suggest_mode, zone_limits
from ctxlayer.core.zones.rules import (
    Rule,
    RulePlacement,
    RulePolicy,
    imperative_warning,
    place_rules,
    render_rules,
)
from ctxlayer.core.zones.working import (
    DecayPolicy,
    ItemEvent,
    WorkingItem,
    decay_turn,
    new_item,
    render_item,
)

__all__ = [
    "DEFAULT_MODES", "DecayPolicy", "ItemEvent", "ModeSpec", "Rule", "RulePlacement",
    "RulePolicy", "WorkingItem", "decay_turn", "imperative_warning", "new_item",
    "place_rules", "render_item", "render_rules", "suggest_mode", "zone_limits",
]
