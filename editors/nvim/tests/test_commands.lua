-- :Ctxlayer subcommands, their completion, and restart.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local ctxlayer = require("ctxlayer")
  local opened = {}
  ctxlayer.setup({
    cmd = H.cmd,
    open = function(path)
      table.insert(opened, path)
    end,
  })
  H.eq(vim.fn.exists(":Ctxlayer"), 2, ":Ctxlayer exists")

  -- Completion works before anything is running.
  local subs = vim.fn.getcompletion("Ctxlayer ", "cmdline")
  for _, name in ipairs({ "status", "mode", "rule", "refresh", "inspect", "assemble" }) do
    H.ok(vim.tbl_contains(subs, name), "completion offers " .. name)
  end
  H.eq(vim.fn.getcompletion("Ctxlayer re", "cmdline"), { "refresh", "restart" }, "completion filters by prefix")
  for _, name in ipairs({ "chats", "why", "gateway" }) do
    H.ok(vim.tbl_contains(subs, name), "completion offers " .. name)
  end
  H.eq(vim.fn.getcompletion("Ctxlayer gateway ", "cmdline"), { "openai", "anthropic" }, "gateway completes the two formats")

  vim.cmd.edit("README.md")
  local client = H.client()
  H.must(client ~= nil, "the daemon started")
  H.must(H.wait_figure() ~= nil, "the status line shows a figure")

  -- The modes are the daemon's: completion offers what its initialize result announced.
  local announced = client.server_capabilities.experimental.ctxlayer.modes
  local modes = type(announced) == "table" and vim.tbl_keys(announced) or {}
  table.sort(modes)
  H.eq(vim.fn.getcompletion("Ctxlayer mode ", "cmdline"), modes, "mode completes the daemon's announced modes")

  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local note = H.note("^ctxlayer: ctx ")
  H.ok(note ~= nil, ":Ctxlayer status reports the figure")
  H.ok(note and note.msg:find("workspace segment [%d.]+k? tokens") ~= nil, ":Ctxlayer status shows the segment", note and note.msg)

  H.clear_notes()
  vim.cmd("Ctxlayer refresh")
  H.ok(H.wait(function()
    return H.note("^ctxlayer: refreshed: ctx ")
  end), ":Ctxlayer refresh answers with the figure")

  H.clear_notes()
  vim.cmd("Ctxlayer")
  H.ok(H.note("^ctxlayer: ctx ") ~= nil, ":Ctxlayer alone shows the status")

  H.clear_notes()
  vim.cmd("Ctxlayer frobnicate")
  local unknown = H.note("unknown subcommand")
  H.ok(unknown and unknown.level == vim.log.levels.ERROR and unknown.msg:find("assemble") ~= nil, "an unknown subcommand lists the real ones")

  H.clear_notes()
  vim.cmd("Ctxlayer mode turbo")
  -- Refused by the plugin, naming the daemon's modes; never sent silently.
  H.ok(H.wait(function()
    return H.note('mode: expected one of ' .. table.concat(modes, ", ") .. ', got "turbo"')
  end), "a bad mode is refused, naming the modes")

  -- Live chats: none yet here.
  H.clear_notes()
  vim.cmd("Ctxlayer chats")
  H.ok(H.wait(function()
    local lines = H.buffer_lines("ctxlayer://chats")
    return lines and lines[1]:match("^0 live chats")
  end), ":Ctxlayer chats before any chat lists none")

  -- assemble: the workspace session's assembled prompt in a buffer.
  local budgets = H.watch_budgets()
  vim.cmd("Ctxlayer assemble")
  local assembled = H.buffer_lines("ctxlayer://assembled")
  H.ok(assembled ~= nil, ":Ctxlayer assemble opens ctxlayer://assembled")
  local text = assembled and table.concat(assembled, "\n") or ""
  H.ok(text:find("## system") ~= nil, "the assembled prompt has a system message", text:sub(1, 300))
  H.ok(text:find("README.md", 1, true) ~= nil, "the assembled prompt shows the workspace (README.md in the tree)")
  local result = ctxlayer.assemble()
  H.ok(result and #result.messages > 0, "assemble() returns messages")

  -- An assembly only shows the workspace's prompt: the daemon's live budget of the workspace
  -- session is the workspace's figure (as VS Code's), not a chat of its own.
  local session_id = require("ctxlayer.client").session_id(client.root_dir)
  H.must(H.wait(function()
    return vim.iter(budgets):any(function(b) return b.live == true and b.sessionId == session_id end)
  end), "after an assembly the daemon sends the session's live budget", vim.inspect(budgets))
  local figure = ctxlayer.statusline()
  H.ok(figure:match("^ctx %d") ~= nil, "the status line shows it as the workspace's figure, not a chat's",
    figure)
  vim.cmd("Ctxlayer chats")
  H.ok(H.wait(function()
    local lines = H.buffer_lines("ctxlayer://chats")
    return lines and lines[1]:match("^0 live chats")
  end, 10000), ":Ctxlayer chats lists no chat for it", vim.inspect(H.buffer_lines("ctxlayer://chats")))
  H.eq(ctxlayer.statusline(), figure, ":Ctxlayer chats leaves the figure in the status line")

  -- inspect: the inspector page, or with `text` a buffer with the breakdown.
  vim.cmd("Ctxlayer inspect text")
  local inspected = H.buffer_lines("ctxlayer://inspect")
  H.ok(inspected and table.concat(inspected, "\n"):find("workspace segment") ~= nil, ":Ctxlayer inspect text shows the breakdown")
  vim.cmd("Ctxlayer inspect")
  H.ok(#opened == 1 and vim.fn.filereadable(opened[1]) == 1, ":Ctxlayer inspect writes the page and opens it")
  local html = opened[1] and table.concat(vim.fn.readfile(opened[1]), "\n") or ""
  H.ok(html:find("<html", 1, true) ~= nil or html:find("<!doctype", 1, true) ~= nil, "the inspector page is HTML")

  -- rule and mode, on the workspace's session.
  H.clear_notes()
  vim.cmd("Ctxlayer rule Answer in English")
  H.ok(H.wait(function()
    return H.note("^ctxlayer: rule .+ added")
  end), ":Ctxlayer rule adds a rule")
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.state.budget.byLayer.rules and b.state.budget.byLayer.rules > 0
  end), "the rule shows in the budget's rules layer (ctx/budgetChanged)")
  -- A weight JSON cannot carry (1e999 reads as infinity): a message naming it, no traceback.
  for _, weight in ipairs({ "1e999", "-1e999", "x" }) do
    H.clear_notes()
    local ran, raised = pcall(vim.cmd, "Ctxlayer rule weight=" .. weight .. " Be brief")
    H.ok(ran, ":Ctxlayer rule weight=" .. weight .. " raises nothing", raised)
    local said = H.note("rule: weight must be a finite number")
    H.ok(said and said.level == vim.log.levels.ERROR and said.msg:find(weight, 1, true) ~= nil,
      ":Ctxlayer rule weight=" .. weight .. " is refused, naming the weight", said and said.msg)
  end
  vim.cmd("Ctxlayer mode short")
  H.ok(H.wait(function()
    return H.note("^ctxlayer: mode short for session %S+: [%d.]+k? / [%d.]+k? tokens$")
  end), ":Ctxlayer mode short switches the session")
  H.clear_notes()
  vim.cmd("Ctxlayer mode")
  H.ok(H.note("^ctxlayer: mode short") ~= nil, ":Ctxlayer mode shows the mode")

  -- restart: a new client, and the figure comes back.
  local old_id = client.id
  vim.cmd("Ctxlayer restart")
  local new_client = H.wait(function()
    local c = vim.lsp.get_clients({ name = "ctxlayer" })[1]
    return c and c.id ~= old_id and c.initialized and c
  end)
  H.ok(new_client ~= nil, ":Ctxlayer restart starts a new client")
  H.ok(H.wait_figure() ~= nil, "the figure is back after restart")
  do
    local b = ctxlayer.budget()
    H.eq(b and b.state.session_id, require("ctxlayer.client").session_id(client.root_dir), "the workspace's session is reopened")
    H.ok(b and (b.state.budget.byLayer.rules or 0) > 0, "its rule survived the restart")
    H.eq(b and b.state.mode, "short", "its mode survived the restart")
  end
  H.ok(new_client and vim.lsp.buf_is_attached(vim.fn.bufnr(vim.fs.joinpath(H.root, "README.md")), new_client.id), "README.md is attached to the new client")

  vim.cmd("Ctxlayer stop")
  H.ok(H.wait(function()
    return #vim.lsp.get_clients({ name = "ctxlayer" }) == 0
  end), ":Ctxlayer stop stops the daemon")
  H.eq(ctxlayer.statusline(), "", "the status line is empty once stopped")
end)
