"""The budget inspector: one self-contained HTML page showing what fills the window.

Pure rendering: it turns an `InspectorData` (built by `build_inspector_data` from messages,
token counts and a trim or assemble result) into one HTML string with every asset inline. It
does no I/O and imports nothing of the daemon's runtime; the daemon's `ctx/inspect` handler
and `ctxlayer inspect --html` gather the data and call it.
"""

from ctxlayer.inspector.conversation import inspect_conversation
from ctxlayer.inspector.data import (
    PRIORITY_CLASSES,
    InspectorData,
    InspectorLayer,
    InspectorMessage,
    build_inspector_data,
    priority_class,
    would_drop,
)
from ctxlayer.inspector.page import render_inspector

__all__ = [
    "PRIORITY_CLASSES",
    "InspectorData",
    "InspectorLayer",
    "InspectorMessage",
    "build_inspector_data",
    "inspect_conversation",
    "priority_class",
    "render_inspector",
    "would_drop",
]
