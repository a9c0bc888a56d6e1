"""The layered system prompt: core, cacheable and dynamic sections, the
cache boundary between them, tool instructions in three formats, skills and history.

Pure: the builder takes everything already gathered (workspace parts, skills, command output,
history digests) and a Tokenizer, and reports volatile-looking cacheable text rather than
failing on it. See build.py for the layout and the choices made.
"""

from .build import DYNAMIC_ID, build_system_prompt
from .earlier import render_digest, select_history
from .spec import (
    ConversationDigest,
    ModelTraits,
    PromptSpec,
    Skill,
    SystemPrompt,
    spec_from_params,
)
from .texts import CACHE_BOUNDARY
from .tools import NATIVE_DESCRIPTION_CAP, cut_at_word, native_tool_descriptions
from .volatile import volatile_findings

__all__ = [
    "CACHE_BOUNDARY",
    "DYNAMIC_ID",
    "NATIVE_DESCRIPTION_CAP",
    "ConversationDigest",
    "ModelTraits",
    "PromptSpec",
    "Skill",
    "SystemPrompt",
    "build_system_prompt",
    "cut_at_word",
    "native_tool_descriptions",
    "render_digest",
    "select_history",
    "spec_from_params",
    "volatile_findings",
]
