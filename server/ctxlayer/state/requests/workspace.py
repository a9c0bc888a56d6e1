"""ctx/segment and ctx/systemPrompt: the workspace segment, and the layered prompt around it."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state.caller import Caller


async def segment(caller: Caller, p: protocol.SegmentParams) -> protocol.WorkspaceSegment:
    """Waits for the first scan, then answers from the cached segment."""
    return await caller.segment()


def system_prompt(caller: Caller, p: protocol.SystemPromptParams,
                  seg: protocol.WorkspaceSegment) -> protocol.SystemPromptResult:
    """Segment parts in (given by the loop), the prompt built on a worker thread."""
    from ctxlayer.core.prompt import build_system_prompt, spec_from_params
    from ctxlayer.tokenizers import prompt_traits

    model = caller.model(p.model)
    spec = spec_from_params(p, traits=prompt_traits(model),
                            workspace_parts=[(part.name, part.text) for part in seg.parts],
                            history=session_history(caller, p))
    return build_system_prompt(spec, caller.state.tokenizers.guarded(model)).to_result()


def session_history(caller: Caller, p: protocol.SystemPromptParams,
                    exclude: str | None = None) -> list:
    """Digests of the workspace's earlier sessions, when the params ask for them (blocking:
    the database)."""
    if not p.session_history:
        return []
    from ctxlayer.state.digests import workspace_digests

    return workspace_digests(caller.state.sessions.store, caller.workspace, exclude)
