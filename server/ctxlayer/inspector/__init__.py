"""The budget inspector: one self-contained HTML page showing what fills the window.

Pure rendering: it turns an `InspectorData` (built by `build_inspector_data` from messages,
token counts and a trim, assemble or prepare result, with the engine's outcome at the
slider's budgets) into one HTML string with every asset inline. It does no I/O and imports
nothing of the daemon's runtime; the daemon's `ctx/inspect` handler and
`ctxlayer inspect --html` gather the data and call it.
"""

from ctxlayer.inspector.conversation import inspect_conversation
from ctxlayer.inspector.data import (
    PRIORITY_CLASSES,
    InspectorData,
    InspectorLayer,
    InspectorMessage,
    InspectorStep,
    build_inspector_data,
    priority_class,
    verdicts,
)
from ctxlayer.inspector.page import render_inspector
from ctxlayer.inspector.steps import engine_steps, prepare_runner, step_budgets

__all__ = [
    "PRIORITY_CLASSES",
    "InspectorData",
    "InspectorLayer",
    "InspectorMessage",
    "InspectorStep",
    "build_inspector_data",
    "engine_steps",
    "inspect_conversation",
    "prepare_runner",
    "priority_class",
    "render_inspector",
    "step_budgets",
    "verdicts",
]
