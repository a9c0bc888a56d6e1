--- ctxlayer.chat_commands: the `:Ctxlayer` subcommands about live chats: `gateway`, `chats`
--- and `why`. commands.lua merges them into its table; like it, they hold no state.

local client = require("ctxlayer.client")
local status = require("ctxlayer.status")

local M = {}

local function commands()
  return require("ctxlayer.commands")
end

local function fail(msg)
  vim.notify("ctxlayer: " .. msg, vim.log.levels.ERROR)
end

M.gateway = {
  desc = "show the gateway's URLs and copy them (or only `openai` / `anthropic`)",
  complete = function()
    return { "openai", "anthropic" }
  end,
  run = function(args)
    require("ctxlayer.gateway").command(args)
  end,
}

M.chats = {
  desc = "list the live chats (ctx/conversations); `:Ctxlayer chats ID` shows that one",
  run = function(args)
    local c = commands().running()
    if not c then
      return
    end
    local chats = require("ctxlayer.chats")
    chats.list(c, args[1], function(conversations, err, warning)
      if not conversations then
        return fail(err)
      end
      if warning then
        vim.notify("ctxlayer: chats: " .. warning, vim.log.levels.WARN)
      end
      local lines = chats.lines(status.get(c.id) or {}, conversations, warning)
      commands().scratch("ctxlayer://chats", lines, "markdown", c)
    end)
  end,
}

M.why = {
  desc = "what was cut from the live chat's last turn, and why (ctx/why); `:Ctxlayer why MESSAGE_ID`",
  run = function(args)
    local c = commands().running()
    if not c then
      return
    end
    local chats = require("ctxlayer.chats")
    local function ask(again)
      local params, label = chats.why_target(status.get(c.id) or {})
      if not params then
        return fail("why: no live chat yet and no session (send a chat through the gateway first)")
      end
      params.messageId = args[1]
      client.request(c, "ctx/why", params, function(result)
        commands().scratch("ctxlayer://why", chats.why_lines(label, result.entries or {}),
          "markdown", c)
      end, function(err)
        -- the live chat's session was closed: the workspace's session instead
        if again and chats.forget_gone(c, err) then
          return ask(false)
        end
        fail("ctx/why failed: " .. (err.message or vim.inspect(err)))
      end)
    end
    ask(true)
  end,
}

return M
