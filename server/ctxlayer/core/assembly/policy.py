"""How a session compacts its history: when, how far, and the share of the summary each of its
parts may take. One frozen struct, the defaults of `[session]` in ctxlayer.toml (config.py reads
them from here). Pure data.
"""

from __future__ import annotations

import msgspec

#: Seconds the state waits for a client's summary before the offline one is used (the core
#: keeps no clock: the number lives here so that the settings and the state share it).
CLIENT_SUMMARY_TIMEOUT = 5.0


class CompactionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    trigger: float = 1.0  # of the history share: past it, compaction runs
    target: float = 0.88  # of the history share: what summary plus verbatim tail fill
    keep_recent: int = 6  # the cheap stages never touch these newest messages
    tool_output_cap: int = 1000
    dedup_min_tokens: int = 32
    extractive_min_tokens: int = 200
    summary_max_tokens: int = 1000
    summary_share: float = 0.20  # of the history share, for decided/open/details
    constraint_share: float = 0.08  # for the hard constraints kept verbatim
    request_share: float = 0.10  # for the newest user message replaced
    action_share: float = 0.12  # for the action log
    ledger_share: float = 0.35  # for the facts ledger
    chars_per_token: int = 3  # a conservative guess for sizing parts in characters
