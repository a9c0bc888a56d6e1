-- The daemon asks the editor for summaries (ctx/summarize) only when setup() got a function.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function chat(n)
  local messages = {}
  for i = 1, n do
    table.insert(messages, { role = "user", content = ("Question %d: how does module %d load its config?"):format(i, i) })
    table.insert(messages, { role = "assistant", content = ("Answer %d: module %d reads ctxlayer.toml at start."):format(i, i) })
  end
  return messages
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  local calls = {}
  ctxlayer.setup({
    cmd = H.cmd,
    summarize = function(messages, instructions, max_tokens)
      table.insert(calls, { messages = messages, instructions = instructions, max_tokens = max_tokens })
      -- on topic (the daemon replaces a summary that shares almost nothing with what it
      -- replaces): the first line of each message it stands for
      local lines = {}
      for _, m in ipairs(messages) do
        table.insert(lines, (m.content or ""):match("^[^\n]*"))
      end
      return ("NVIM-SUMMARY of %d messages: %s"):format(#messages, table.concat(lines, " / "))
    end,
  })
  vim.cmd.edit("README.md")
  local client = H.client()
  H.must(H.wait_figure() ~= nil, "the daemon answers")
  H.ok(client.config.capabilities.experimental.ctxlayer.summarize == true, "summarize is declared")
  local session = ctxlayer.budget().state.session_id
  H.ok(session ~= nil, "a session is open")

  local appended = ctxlayer.request("ctx/session/append", { sessionId = session, messages = chat(6) })
  H.ok(appended and appended.used > 0, "ctx/session/append returns the budget")
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and appended and b.used == appended.used
  end), "ctx/budgetChanged moved the status to the appended budget", vim.inspect({ ctxlayer.budget().used, appended and appended.used }))

  local compacted, err = ctxlayer.request("ctx/session/compact", { sessionId = session, keepRecent = 2 })
  H.ok(compacted ~= nil, "ctx/session/compact answers", err)
  H.eq(#calls, 1, "the summarize function was called once")
  local call = calls[1] or {}
  H.ok(type(call.messages) == "table" and #call.messages > 0 and call.messages[1].content ~= nil, "it got the messages")
  H.ok(type(call.instructions) == "string" and call.instructions ~= "", "it got instructions")
  H.ok(type(call.max_tokens) == "number" and call.max_tokens > 0, "it got max_tokens")
  H.ok(compacted and compacted.summary.content:find("NVIM-SUMMARY", 1, true) ~= nil, "the summary is the editor's", compacted and compacted.summary.content)
  H.ok(compacted and compacted.replaced > 0, "old messages were replaced")

  -- A failing summarize function is an error to the daemon, which falls back to its own.
  require("ctxlayer.config").current.summarize = function()
    error("model offline")
  end
  ctxlayer.request("ctx/session/append", { sessionId = session, messages = chat(6) })
  local again, err2 = ctxlayer.request("ctx/session/compact", { sessionId = session, keepRecent = 2 })
  H.ok(again ~= nil, "compact still works when summarize fails", err2)
  H.ok(again and again.summary.content:find("NVIM-SUMMARY of", 1, true) == nil, "the daemon's own summary is used", again and again.summary.content)
end)
