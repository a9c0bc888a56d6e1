"""A workspace's policy: its configuration turned into what the services use.

One source for each default: the values live in `ctxlayer.config` (the typed settings tree,
whose defaults come from the core's own tables), and this module only translates.
Must not: read files (the caller loads the configuration).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctxlayer.core.assembly.compaction import CompactionPolicy
from ctxlayer.core.assembly.policy import CLIENT_SUMMARY_TIMEOUT
from ctxlayer.core.prepare.model import DEFAULT_POLICY, PreparePolicy
from ctxlayer.core.zones import DEFAULT_MODES, DecayPolicy, ModeSpec, RulePolicy
from ctxlayer.state.session_service import SessionSettings
from ctxlayer.statefiles import KEEP_DAYS


class WorkspacePolicy(msgspec.Struct, kw_only=True):
    config: Any  # ctxlayer.config.Config
    sessions: SessionSettings
    durability: str = "normal"
    summarizer_timeout: float = CLIENT_SUMMARY_TIMEOUT
    keep_days: int = KEEP_DAYS
    #: a live chat's next summary is prepared once it passes this share of its budget
    live: PreparePolicy = DEFAULT_POLICY


def policy_from_config(config: Any) -> WorkspacePolicy:
    """The policy of a configuration (None: every default)."""
    from ctxlayer.config import Config

    config = config if config is not None else Config()
    cfg = config.session
    modes = {name: ModeSpec(rules_share=m.rules_share, working_share=m.working_share, cap=m.cap)
             for name, m in ((name, getattr(cfg.modes, name)) for name in DEFAULT_MODES)}
    sessions = SessionSettings(
        modes=modes, default_mode=cfg.default_mode,
        rules=RulePolicy(max_rules=cfg.max_rules, prefix=cfg.rule_prefix),
        decay=DecayPolicy(factor=cfg.decay, compress_below=cfg.compress_below,
                          remove_below=cfg.remove_below),
        compaction=CompactionPolicy(trigger=cfg.compaction_trigger,
                                    target=cfg.compaction_target, keep_recent=cfg.keep_recent,
                                    tool_output_cap=cfg.tool_output_cap,
                                    summary_max_tokens=cfg.summary_max_tokens),
        calibration_window=cfg.calibration_window,
    )
    live = msgspec.structs.replace(DEFAULT_POLICY, precompact_at=config.gateway.precompact_at)
    return WorkspacePolicy(config=config, sessions=sessions, durability=cfg.durability,
                           summarizer_timeout=cfg.summarizer_timeout, keep_days=cfg.keep_days,
                           live=live)
