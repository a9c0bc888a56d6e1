-- :checkhealth ctxlayer with a running daemon, and with bad options; the help file's tags.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function health_text()
  vim.cmd("checkhealth ctxlayer")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd })
  vim.cmd.edit("README.md")
  H.must(H.wait_figure() ~= nil, "the daemon answers")

  local text = health_text()
  H.ok(text:find("ctxlayer: daemon") ~= nil, "the health report has the daemon section", text)
  H.ok(text:find("OK daemon found: .-ctxlayer %(ctxlayer [%d.]+") ~= nil, "the daemon is found with its version", text)
  H.ok(text:find("OK client %d+ attached to 1 buffer%(s%)") ~= nil, "a client is attached", text)
  H.ok(text:find("OK options are valid") ~= nil, "the options are valid")
  H.ok(text:find("OK Neovim 0%.1%d") ~= nil, "the Neovim version is fine")
  H.ok(text:find("LSP log") ~= nil and text:find("state directory") ~= nil, "log paths are shown")
  H.ok(text:find("ERROR") == nil, "no errors in the health report", text)
  H.ok(text:find("ctxlayer: gateway") ~= nil, "the health report has the gateway section", text)

  -- A daemon that ended unasked: the message sends the user here, which says so.
  local pids = vim.api.nvim_get_proc_children(vim.fn.getpid())
  H.must(#pids == 1, "the daemon is Neovim's one child", vim.inspect(pids))
  vim.uv.kill(pids[1], "sigkill")
  H.must(H.wait(function()
    return ctxlayer.statusline() == "ctx !"
  end), "the killed daemon shows `ctx !`", ctxlayer.statusline())
  local crashed = health_text()
  H.ok(crashed:find("ERROR the daemon of " .. H.root .. " failed: ctxlayer: the daemon exited", 1, true)
    ~= nil and crashed:find("signal 9", 1, true) ~= nil,
    "the health report names the workspace whose daemon ended, and how", crashed)
  vim.cmd("Ctxlayer restart")
  H.must(H.wait_figure() ~= nil, "the daemon answers again after :Ctxlayer restart")
  H.ok(health_text():find("failed:", 1, true) == nil, "and the failure is no longer reported")

  -- Bad options show up as errors naming the field.
  ctxlayer.setup({ cmd = H.cmd, timeout_ms = "soon", autostart = false })
  local bad = health_text()
  H.ok(bad:find("ERROR invalid option: opts.timeout_ms: expected a positive integer") ~= nil, "a bad option is an ERROR naming the field", bad)

  -- A daemon that cannot be found is an actionable error.
  ctxlayer.setup({ cmd = { "/nonexistent/ctxlayer", "serve" }, autostart = false })
  local missing = health_text()
  H.ok(missing:find("is not executable") ~= nil and missing:find("pipx install /path/to/ctxlayer", 1, true) ~= nil, "a missing daemon says how to install it", missing)

  -- The help file is well formed: helptags builds its tags without errors.
  local docdir = vim.fn.tempname()
  vim.fn.mkdir(docdir, "p")
  vim.fn.writefile(vim.fn.readfile(vim.fs.joinpath(H.plugin_dir, "doc", "ctxlayer.txt")), docdir .. "/ctxlayer.txt")
  local ok, err = pcall(vim.cmd.helptags, docdir)
  H.ok(ok, "helptags accepts doc/ctxlayer.txt", err)
  local tags = ok and table.concat(vim.fn.readfile(docdir .. "/tags"), "\n") or ""
  for _, tag in ipairs({
    "ctxlayer.txt", "ctxlayer.setup()", "ctxlayer.statusline()", ":Ctxlayer", "ctxlayer-health", "ctxlayer.gateway()",
    "ctxlayer-chats", "ctxlayer-compaction", "ctxlayer.setups.codecompanion()", "ctxlayer.setups.avante()",
    "ctxlayer.setups.gp()", "ctxlayer.setups.copilotchat()",
  }) do
    H.ok(tags:find(tag, 1, true) ~= nil, "help tag " .. tag)
  end
end)
