--- ctxlayer.handlers: what the plugin does with the daemon's notifications and requests.
---
--- Owns the handler table given to vim.lsp.start: ctx/segmentChanged and ctx/budgetChanged
--- feed status.lua (a live chat's budget goes to chats.lua), ctx/summarize calls the user's
--- summarize function. It starts nothing and keeps no state of its own.

local config = require("ctxlayer.config")
local status = require("ctxlayer.status")

local M = {
  ["ctx/segmentChanged"] = function(_, params, ctx)
    local state = status.get(ctx.client_id)
    if not state then
      return
    end
    local segment = vim.tbl_extend("force", state.segment or {}, params)
    status.update(ctx.client_id, { segment = segment })
    -- The notification carries figures only; fetch the parts for :Ctxlayer status.
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    if client then
      require("ctxlayer.client").request(client, "ctx/segment", {}, function(full)
        local now = status.get(ctx.client_id)
        if now and (not now.segment or (full.version or 0) >= (now.segment.version or 0)) then
          status.update(ctx.client_id, { segment = full })
        end
      end, function() end)
    end
  end,

  ["ctx/budgetChanged"] = function(_, params, ctx)
    local state = status.get(ctx.client_id)
    if not state then
      return
    end
    require("ctxlayer.chats").warn(ctx.client_id, params)
    local conversation = params.conversationId ~= nil and params.conversationId ~= vim.NIL
    local session = params.sessionId ~= vim.NIL and params.sessionId or nil
    local own = state.session_id ~= nil and not conversation
      and (session == nil or session == state.session_id)
    if params.live == true and not own then
      -- The chat that last sent a request (the gateway, ctx/prepare, another editor's
      -- assembled session): it takes over the status line. A re-measure of it (a file event)
      -- stays live.
      return require("ctxlayer.chats").on_budget(ctx.client_id, params)
    end
    if conversation then
      return require("ctxlayer.chats").remember(ctx.client_id, params) -- listed, not shown
    end
    if not own then
      return -- another editor's session on the same daemon
    end
    -- The workspace's own session, live too once :Ctxlayer assemble showed its prompt: its
    -- figure, as VS Code's. Before, an assembly took the status line (and :Ctxlayer status and
    -- inspect) from the live gateway chat: `ctx chat 953/112k 1%` became `ctx chat 73/112k 0%`.
    status.update(ctx.client_id, { budget = params })
  end,

  --- The daemon asks the editor's model for a summary (only when setup() got `summarize`).
  ["ctx/summarize"] = function(_, params)
    local summarize = config.current.summarize
    if not summarize then
      return nil, vim.lsp.rpc_response_error(-32601, "this client has no summarize function")
    end
    local ok, text = pcall(summarize, params.messages or {}, params.instructions or "", params.maxTokens)
    if not ok then
      return nil, vim.lsp.rpc_response_error(-32603, "summarize failed: " .. tostring(text))
    end
    if type(text) ~= "string" then
      return nil, vim.lsp.rpc_response_error(-32603, "summarize returned " .. type(text) .. ", expected a string")
    end
    return { text = text }
  end,
}

return M
