"""`Caller`: who asks, as the state sees it, whichever face the request came through.

A JSON-RPC connection makes one at `initialize` (its options, its workspace, whether it can
write summaries with its own model); the gateway makes one for its workspace. Request
functions read the model, the default budget and the workspace segment from here, and never
from a face.
Must not: import a face.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ctxlayer import protocol
from ctxlayer.core.errors import MAX_TOKENS, ContextError
from ctxlayer.core.text import content_hash
from ctxlayer.core.trim import TrimCache
from ctxlayer.state.chatcodec import no_room

if TYPE_CHECKING:
    from ctxlayer.config import Config
    from ctxlayer.state.live import LiveWorkspace
    from ctxlayer.state.policy import WorkspacePolicy
    from ctxlayer.state.state import State

#: asks the client's own model for a summary; None when it cannot or did not answer in time
Summarizer = Callable[[protocol.SummarizeParams], Awaitable[str | None]]


class Caller:
    def __init__(self, state: State, *, source: protocol.Source = "session",
                 options: protocol.InitializationOptions | None = None) -> None:
        self.state = state
        self.source: protocol.Source = source
        self.options = options or protocol.InitializationOptions()
        self.root: Path | None = None
        #: the workspace folder as the client named it, `root` before its symlinks were
        #: resolved (~/work/proj, ~/work leading to another disk): the agent files of the
        #: folders on that way are read (~/work/AGENTS.md)
        self.opened_as: Path | None = None
        self.config: Config | None = None
        self.live: LiveWorkspace | None = None
        #: set once the face decided on `live` (requests that arrive earlier wait for it)
        self.live_decided = asyncio.Event()
        self.summarize: Summarizer | None = None
        #: this caller's last ctx/trim, so a re-trim of the same chat with a message more
        #: counts only the new text (core/trim/warm.py); one trim uses it at a time
        self.trim_cache = TrimCache()
        self.trim_lock = threading.Lock()

    @property
    def workspace(self) -> str:
        """The key of this caller's workspace in the state (its root, or "" for none)."""
        return str(self.root) if self.root is not None else ""

    @property
    def policy(self) -> WorkspacePolicy:
        return self.state.policy(self.workspace)

    def model(self, requested: str | None = None) -> str | None:
        """The model a request is about: its own, else the one given at initialize."""
        return requested or self.options.model

    def default_mode(self) -> str:
        """The mode of a session opened without one: initialize's, else the workspace's."""
        return self.options.mode or self.policy.sessions.default_mode

    def default_budget(self, model: str | None, reserve_output: int | None = None) -> int:
        """Context window (initialize's, else the model's) minus the output reserve: the
        request's (refused naming it when it leaves no room), else initialize's, else the
        model's usual, at most half the window (a local model given a 4k window kept
        the 8k allowance of its name: a budget of one token, stored with every session)."""
        from ctxlayer.tokenizers import model_info

        info = model_info(model)
        window = self.options.context_window or info.context_window
        if reserve_output is not None:
            if reserve_output >= window:
                raise ContextError("invalid", no_room(reserve_output, window, model),
                                   field="reserveOutput")
            return window - reserve_output
        reserve = self.options.reserve_output
        if reserve is None or reserve >= window:  # initialize's, said there, fits its model
            reserve = min(info.output_allowance, window // 2)
        return window - reserve

    def widest_window(self, model: str | None) -> int | None:
        """The most a session's budget for ``model`` may be: initialize's window, else the
        longest the model has (1M where a beta opens it); None for a model the table does not
        know, whose window is a guess a budget may well be right over."""
        from ctxlayer.tokenizers import model_info
        from ctxlayer.tokenizers.long_windows import LONG_WINDOW, has_long_window

        if self.options.context_window:
            return self.options.context_window
        info = model_info(model)
        if info.family == "unknown":
            return None
        return LONG_WINDOW if has_long_window(info.name.lower()) else info.context_window

    def require_budget_fits(self, budget: int, model: str | None, *, field: str = "budget",
                            kept: bool = False) -> None:
        """Refuse a session's budget over its model's window, naming ``field``: an assembly
        at it sends a prompt the provider refuses, with no notice (a 60,000-token budget for
        gpt-3.5-turbo's 16,385). ``kept``: the budget is the session's own, over the window
        of the model this request (``field``) brings."""
        from ctxlayer.tokenizers import model_info

        window = self.widest_window(model)
        if window is None or budget <= window:
            return
        default, model = self.default_budget(model), model or model_info(model).name
        if kept:
            raise ContextError("invalid", f"the session's budget of {budget:,} tokens is over "
                               f"the {window:,}-token context window of {model}: give a budget "
                               f"of at most {window:,} with it, or resetBudget for the model's "
                               f"default ({default:,})", field=field)
        # said for any client: the option's name differs by editor (VS Code has none)
        raise ContextError("invalid", f"{budget:,} tokens is over the {window:,}-token context "
                           f"window of {model}: leave the budget out for the model's default "
                           f"({default:,}), or tell ctxlayer the model's window when it is "
                           "larger (initializationOptions.contextWindow; Neovim: "
                           "context_window)", field=field)

    def take_options(self, options: protocol.InitializationOptions, problems: list[str]) -> None:
        """The options initialize gave; an output reserve that leaves its model's window no
        room is said once in ``problems`` and left out (its default is used)."""
        from ctxlayer.tokenizers import DEFAULT_MODEL, model_info

        for field, name, least in (("context_window", "contextWindow", 1),
                                   ("reserve_output", "reserveOutput", 0)):
            value = getattr(options, field)
            if value is not None and not least <= value <= MAX_TOKENS:
                problems.append(f"initializationOptions.{name}: {value:,} is not a count of "
                                "tokens; its default is used")
                options = msgspec.structs.replace(options, **{field: None})
        reserve = options.reserve_output
        model = options.model or DEFAULT_MODEL
        info = model_info(model)
        window = options.context_window or info.context_window
        if info.family == "unknown":  # as the gateway says it of a request's model
            problems.append(f"initializationOptions.model: unknown model {model!r}: counted "
                            f"with {info.encoding} and a window of {window:,} tokens "
                            "(contextWindow sets its own)")
        if reserve is not None and reserve >= window:
            problems.append("initializationOptions.reserveOutput: "
                            f"{no_room(reserve, window, model)}; its default is used")
            options = msgspec.structs.replace(options, reserve_output=None)
        self.options = options

    async def segment(self) -> protocol.WorkspaceSegment:
        """The current workspace segment; an empty one when there is no workspace."""
        if self.root is not None and not self.live_decided.is_set():
            await self.live_decided.wait()
        if self.live is None:
            return empty_segment()
        return await self.live.current()

    def announcement(self, methods: list[str]) -> protocol.ServerAnnouncement:
        """What editors read at initialize instead of guessing."""
        from ctxlayer.tokenizers import DEFAULT_MODEL

        sessions = self.policy.sessions
        model = self.model() or DEFAULT_MODEL
        return protocol.ServerAnnouncement(
            protocol_version=protocol.PROTOCOL_VERSION, methods=methods,
            notifications=sorted(protocol.NOTIFICATIONS), model=model,
            default_budget=self.default_budget(model),
            default_mode=self.default_mode(),  # type: ignore[arg-type]
            modes={name: protocol.ModeInfo(rules_share=m.rules_share,
                                           working_share=m.working_share, cap=m.cap)
                   for name, m in sessions.modes.items()},
            gateway=self.state.gateway_urls)


def empty_segment() -> protocol.WorkspaceSegment:
    return protocol.WorkspaceSegment(text="", tokens=0, hash=content_hash(""), version=0,
                                     updated_at="", parts=[])
