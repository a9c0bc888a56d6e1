-- setup, the client attaches, the status line shows a figure, and it moves after :write.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local ctxlayer = require("ctxlayer")

  -- Bad options are reported once, naming the field, and do not stop the plugin.
  H.ok(ctxlayer.setup({ budget = -5, mode = 42, gateway = "yes", colour = true, autostart = false }), "setup accepts bad options without raising")
  local note = H.note("invalid options")
  H.ok(note and note.msg:find("opts.budget: expected a positive integer") ~= nil, "the bad budget is named", note and note.msg)
  H.ok(note and note.msg:find("opts.mode: expected a mode name") ~= nil, "the bad mode is named")
  H.ok(note and note.msg:find("opts.gateway: expected true, false or a table") ~= nil, "the bad gateway switch is named")
  H.ok(note and note.msg:find("opts.colour: unknown option") ~= nil, "an unknown option is named")
  H.eq(ctxlayer.statusline(), "", "no daemon yet: the status line is empty")
  local human = require("ctxlayer.status").human
  H.eq({ human(950), human(42100), human(128000), human(872000), human(999600), human(1050000) },
    { "950", "42.1k", "128k", "872k", "1M", "1.05M" }, "tokens read as people read them")

  -- The real setup: opening a file of the workspace starts the daemon and attaches it.
  H.clear_notes()
  H.ok(ctxlayer.setup({ cmd = H.cmd }), "setup with the daemon command")
  H.eq(#require("ctxlayer.config").problems, 0, "no problems in valid options")
  vim.cmd.edit("README.md")
  local readme = vim.api.nvim_get_current_buf()
  local client = H.client()
  H.must(client ~= nil, "a ctxlayer client started")
  H.ok(H.wait(function()
    return client.initialized and vim.lsp.buf_is_attached(readme, client.id)
  end), "the client is initialized and attached to README.md")
  H.eq(client.root_dir, vim.fs.normalize(vim.uv.fs_realpath(H.root)), "root is the git repository")
  H.eq(client.server_info and client.server_info.name, "ctxlayer", "serverInfo.name is ctxlayer")
  H.ok(client.config.capabilities.experimental.ctxlayer.summarize == false, "summarize is not declared without a function")
  local sent = client.config.init_options.config
  H.ok(sent and sent.gateway and sent.gateway.enabled == true, "the gateway is asked for by default (initializationOptions.config.gateway.enabled)", vim.inspect(sent))

  local first = H.wait_figure()
  local session = require("ctxlayer.client").session_id(client.root_dir)
  H.eq(ctxlayer.budget() and ctxlayer.budget().source, "session", "with sessions the figure is the session's budget")
  H.eq(ctxlayer.budget() and ctxlayer.budget().state.session_id, session, "the session id is the workspace's")
  local by_layer = ctxlayer.budget() and ctxlayer.budget().state.budget.byLayer or {}
  H.ok((by_layer.workspace or 0) > 0, "the session budget counts the workspace segment", vim.inspect(by_layer))
  H.must(first ~= nil, "the status line shows a figure", ctxlayer.statusline())
  local before = ctxlayer.budget()
  H.ok(before and before.used > 0 and before.limit > 1000, "budget() has used and limit", vim.inspect(before))
  H.ok(ctxlayer.statusline({ highlight = true }):match("^%%#Ctxlayer%a+#ctx ") ~= nil, "highlighted status line names a group")
  local drawn = vim.api.nvim_eval_statusline(ctxlayer.statusline_hl(), { highlights = true })
  H.eq(drawn.str, ctxlayer.statusline(), "statusline_hl() draws exactly the figure")
  H.ok(drawn.highlights[1] and drawn.highlights[1].group:match("^Ctxlayer") ~= nil, "in a ctxlayer highlight group", vim.inspect(drawn.highlights))

  -- Events seen from here on: segment changes and status redraws.
  local events = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = "CtxlayerStatus",
    callback = function()
      events = events + 1
    end,
  })

  -- A new file in the repository: the tree and git status change, so the segment does.
  local lines = {}
  for i = 1, 200 do
    lines[i] = ("def handler_%d(request):  # route number %d of the new module"):format(i, i)
  end
  H.write_file("src/routes.py", lines)
  local second = H.wait_figure(first)
  H.ok(second ~= nil, "the status line moves after :write of a new file", ("%s -> %s"):format(first, ctxlayer.statusline()))
  local after = ctxlayer.budget()
  H.ok(after and before and after.used ~= before.used, "used tokens changed", ("%s -> %s"):format(before and before.used, after and after.used))
  H.ok(events > 0, "User CtxlayerStatus fired")
  H.ok(vim.lsp.buf_is_attached(0, client.id), "the new file's buffer is attached too")

  -- Editing a tracked file changes git status: the figure moves again.
  H.write_file("README.md", { "# demo", "", "A changed readme line that git status now reports as modified." })
  local third = H.wait_figure(second)
  H.ok(third ~= nil, "the status line moves after :write of a tracked file", ("%s -> %s"):format(second, ctxlayer.statusline()))

  -- The lualine component shows the same text and a level colour.
  local component = ctxlayer.lualine()
  H.eq(component[1](), (ctxlayer.statusline():gsub("%%", "%%%%")), "the lualine component shows the status line, % escaped")
  local evaluated = vim.api.nvim_eval_statusline(component[1](), {}).str
  H.eq(evaluated, ctxlayer.statusline(), "evaluated as statusline code it reads as the figure")
  H.ok(component.cond(), "the lualine component is visible")
  H.ok(vim.tbl_contains({ "CtxlayerOk", "CtxlayerWarn", "CtxlayerError" }, component.color()), "the lualine colour is a ctxlayer group")

  -- A file outside the workspace: no daemon serves it, so it shows no figure (the
  -- workspace's would pass for its own) and has no client.
  local outside = vim.fs.joinpath(vim.fs.dirname(H.root), "outside", "notes.txt")
  vim.fn.mkdir(vim.fs.dirname(outside), "p")
  vim.fn.writefile({ "notes kept outside any workspace" }, outside)
  vim.cmd.edit(vim.fn.fnameescape(outside))
  local loose = vim.api.nvim_get_current_buf()
  H.eq(#vim.lsp.get_clients({ bufnr = loose }), 0, "no client is attached to a file outside the workspace")
  H.eq(ctxlayer.statusline({ bufnr = loose }), "", "its status line is empty")
  H.eq(ctxlayer.statusline(), "", "its status line is empty (as the current buffer)")
  local other = ctxlayer.client(loose)
  H.eq(other and other.root_dir, nil, "client(bufnr) is nil for it")
  local figures = ctxlayer.budget(loose)
  H.eq(figures and figures.used, nil, "budget(bufnr) is nil for it")
  H.clear_notes()
  vim.cmd("Ctxlayer status")
  H.ok(H.note("not running for this buffer") ~= nil, ":Ctxlayer status there says no daemon serves it")
  H.eq(ctxlayer.statusline({ bufnr = readme }), third, "the workspace's file still shows its figure")
  H.eq(ctxlayer.client(readme) and ctxlayer.client(readme).id, client.id, "and its client")
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(H.root, "README.md")))

  -- count() and trim() go to the daemon; the last trim feeds the status line.
  local counted, err = ctxlayer.count({ "hello world", "" })
  H.ok(counted and counted.total > 0 and #counted.tokens == 2, "count() answers", err or vim.inspect(counted))
  local messages = {
    { role = "system", content = "You are terse.", pinned = true },
    { role = "user", content = "Summarize the routes module." },
    { role = "assistant", content = "It defines two hundred handlers." },
  }
  local trimmed, terr = ctxlayer.trim(messages)
  H.ok(trimmed and #trimmed.messages == 3 and trimmed.tokens > 0, "trim() keeps a small chat whole", terr or vim.inspect(trimmed))
  local state = ctxlayer.budget().state
  H.eq(state.last_trim and state.last_trim.tokens, trimmed and trimmed.tokens, "the last trim is kept for :Ctxlayer status")

  -- A bad request comes back as an error naming the field, and the daemon lives on.
  local bad, berr = ctxlayer.request("ctx/trim", { messages = { { role = "wizard", content = "x" } } })
  H.ok(bad == nil and berr and berr:find("role") ~= nil, "an invalid message role is reported, naming the field", berr)
  local again = ctxlayer.count({ "still alive" })
  H.ok(again and again.total > 0, "the daemon answers after the bad request")
end)
