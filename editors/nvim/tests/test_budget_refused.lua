--- A budget over the model's window (gpt-4o, 500,000): the daemon refuses the session, and the
--- plugin said so but went on showing the refused budget as the limit (`ctx 111/500k`,
--- `used 111 of 500000`), and trim() fitted messages to it. The figures now use the daemon's
--- default for the model; once setup() brings a budget that fits, the session opens and
--- `:Ctxlayer status` no longer says the session failed.

local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

--- The lines of `:Ctxlayer status`, as one text.
local function status_text()
  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local b = H.buffer_lines("ctxlayer://status")
  local text = b and table.concat(b, "\n") or ""
  for _, n in ipairs(H.notes) do
    text = text .. "\n" .. n.msg
  end
  return text
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  local client = require("ctxlayer.client")
  ctxlayer.setup({ cmd = H.cmd, model = "gpt-4o", budget = 500000, gateway = false })
  vim.cmd.edit("README.md")
  H.must(H.client() ~= nil, "the daemon starts")
  H.must(H.wait(function() return H.note("could not be opened") end) ~= nil,
    "the refusal is said", vim.inspect(H.notes))
  local default = client.announcement(H.client()).defaultBudget
  H.ok(default and default < 500000, "the daemon announces gpt-4o's default budget", default)
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.limit == default
  end), "the limit is the daemon's default, not the refused budget",
    vim.inspect(ctxlayer.budget()))
  H.ok(not ctxlayer.statusline():find("500k", 1, true), "the status line shows no 500k",
    ctxlayer.statusline())
  local text = status_text()
  H.ok(not text:find("of 500000 tokens", 1, true), ":Ctxlayer status shows no 500000", text)
  H.ok(text:find("session failed", 1, true) ~= nil, ":Ctxlayer status says the session failed",
    text)

  local messages = {}
  for i = 1, 4 do
    table.insert(messages, { role = i % 2 == 1 and "user" or "assistant",
      content = ("message %d "):format(i) .. string.rep("lorem ipsum dolor ", 50) })
  end
  local trimmed, err = ctxlayer.trim(messages)
  H.ok(trimmed and trimmed.budget == default, "trim() fits to the default, not the refused budget",
    vim.inspect(trimmed and trimmed.budget or err))

  -- the user fixes the budget: the session opens, and its failure is no longer reported
  ctxlayer.setup({ cmd = H.cmd, model = "gpt-4o", budget = 100000, gateway = false })
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.source == "session" and b.limit == 100000
  end), "setup() again: the session opens at the new budget", vim.inspect(ctxlayer.budget()))
  text = status_text()
  H.ok(not text:find("session failed", 1, true), ":Ctxlayer status: no stale failure", text)
  trimmed = ctxlayer.trim(messages)
  H.ok(trimmed and trimmed.budget == 100000, "trim() fits to the budget the daemon took",
    vim.inspect(trimmed and trimmed.budget))

  -- a re-sourced config brings a budget over the window while the session is open: the
  -- session keeps its 100,000, and :Ctxlayer assemble (the daemon's live budget of the
  -- session is the status line's figure) assembled to the refused budget and showed it
  -- (`ctx 133/10M`)
  H.clear_notes()
  ctxlayer.setup({ cmd = H.cmd, model = "gpt-4o", budget = 10000000, gateway = false })
  H.must(H.wait(function() return H.note("10,000,000 tokens is over") end) ~= nil,
    "the refusal of 10,000,000 is said", vim.inspect(H.notes))
  local budgets = H.watch_budgets()
  vim.cmd("Ctxlayer assemble")
  H.ok(H.wait(function()
    return vim.iter(budgets):any(function(b) return b.live == true end)
  end), ":Ctxlayer assemble: the daemon sends the session's live budget", vim.inspect(budgets))
  H.ok(ctxlayer.budget().source == "session", ":Ctxlayer assemble: the figure is the session's",
    vim.inspect(ctxlayer.budget()))
  local assembled = H.buffer_lines("ctxlayer://assembled") or {}
  H.ok(ctxlayer.budget().limit == 100000, ":Ctxlayer assemble: the limit is the session's budget",
    ctxlayer.statusline() .. " " .. tostring(assembled[1]))
  H.ok(not ctxlayer.statusline():find("10M", 1, true), ":Ctxlayer assemble: no refused 10M shown",
    ctxlayer.statusline())
end)
