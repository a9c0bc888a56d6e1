"""The gateway inside `ctxlayer serve`: started when a connection's workspace says
`[gateway] enabled = true` (its ctxlayer.toml, or the client's `initializationOptions.config`),
before the initialize answer, so that answer can announce the URLs. One gateway per daemon,
for the first workspace that asked (a TCP daemon serving several workspaces serves the
gateway for that one; say so in the log for the others).
Must not: be imported by the JSON-RPC face (commands/serve.py hands it to the state).
"""

from __future__ import annotations

import logging

from ctxlayer.gateway.server import GatewayServer, start_gateway
from ctxlayer.state import Caller, State
from ctxlayer.state.opening import leave_workspace, open_workspace
from ctxlayer.state.seams import Asker

log = logging.getLogger(__name__)


class DaemonGateway:
    """`state.gateway_starter`: starts the gateway once, for the workspace that first asks."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.server: GatewayServer | None = None
        self.workspace: str | None = None
        #: the gateway's own caller on its workspace: one of the live workspace's references,
        #: told its changes, until the gateway stops (`close` releases it)
        self.caller: Caller | None = None

    async def __call__(self, asking: Asker) -> None:
        """Start for `asking`'s workspace (its config enables the gateway: the caller checked)."""
        config = asking.policy.config.gateway
        if self.server is not None:
            if asking.workspace != self.workspace:
                log.warning("the gateway already serves %s; %s gets no gateway of its own",
                            self.workspace, asking.workspace)
            return
        caller = Caller(self.state, source="gateway", options=asking.options)
        caller.root, caller.config = asking.root, asking.config
        # its name too: the caller on a workspace knows the name it was opened by
        caller.opened_as = asking.opened_as
        if asking.root is not None:
            open_workspace(caller, asking.config, asking.options.config)
        caller.live_decided.set()
        try:
            self.server = await start_gateway(self.state, caller, config)
        except Exception as exc:  # a taken port or a bad host: the daemon goes on without it
            leave_workspace(caller)
            self.state.events.message(asking.workspace, "error",
                                      f"ctxlayer: the gateway could not start: {exc}")
            return
        self.workspace, self.caller = asking.workspace, caller
        urls = self.server.urls
        log.info("gateway listening: %s (OpenAI), %s (Anthropic)", urls.openai, urls.anthropic)

    async def close(self) -> None:
        """Stop the gateway gracefully (GatewayServer.close), once, and release its caller's
        hold on the workspace: before, the workspace was watched and its sessions re-measured
        for the stopped gateway after the last editor on it had gone."""
        if self.server is not None:
            await self.server.close()
            self.server = None
        if self.caller is not None:
            leave_workspace(self.caller)
            self.caller = None
