-- A daemon older than the plugin's protocol (tests/fixtures/old_daemon.py announces protocol
-- 0.0 and two methods) is told apart once: one error naming what it lacks and saying to
-- update ctxlayer, the daemon stopped, and no restart for every buffer opened after.
-- client.problem is also checked on announcements made up here, and on the real daemon's.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function fake(announcement)
  return { server_capabilities = { experimental = { ctxlayer = announcement } } }
end

H.run(function()
  local client = require("ctxlayer.client")
  local full = { protocolVersion = client.PROTOCOL_VERSION, methods = vim.deepcopy(client.REQUESTS),
    model = "gpt-4o", defaultBudget = 100000, defaultMode = "deep", modes = { deep = {} } }
  H.eq(client.problem(fake(full)), nil, "a complete announcement of this protocol is taken")
  H.ok((client.problem(fake(nil)) or ""):find("^ctxlayer: this daemon speaks no protocol version; the plugin needs protocol "),
    "no announcement: says there is no protocol version", client.problem(fake(nil)))
  local lacking = vim.tbl_extend("force", full, { methods = { "ctx/segment" }, modes = vim.NIL })
  local said = client.problem(fake(lacking)) or ""
  H.ok(said:find("it lacks modes, ctx/systemPrompt, ", 1, true) and said:find("update ctxlayer", 1, true),
    "a missing field and methods are named, with what to do", said)

  local python = vim.fs.joinpath(vim.fs.dirname(H.daemon), "python")
  local starts = vim.fn.tempname()
  local script = vim.fs.joinpath(H.plugin_dir, "tests", "fixtures", "old_daemon.py")
  require("ctxlayer").setup({ cmd = { python, script, starts } })
  vim.cmd.edit("README.md")
  local refused = H.wait(function()
    return H.note("^ctxlayer: this daemon speaks protocol 0%.0; the plugin needs protocol ")
  end)
  H.ok(refused and refused.level == vim.log.levels.ERROR and refused.msg:find("update ctxlayer", 1, true),
    "an older daemon is refused with one error saying to update ctxlayer", refused and refused.msg)
  H.ok(H.wait(function()
    return #vim.lsp.get_clients({ name = client.NAME }) == 0
  end), "and stopped")
  vim.cmd.edit("src/app.py")
  H.eq(client.start(0), nil, "opening another file starts no second daemon")
  H.eq(#vim.lsp.get_clients({ name = client.NAME }), 0, "none runs")
  H.eq(#vim.fn.readfile(starts), 1, "the old daemon was started once")
  local errors = vim.tbl_filter(function(n)
    return n.msg:find("protocol", 1, true) ~= nil
  end, H.notes)
  H.eq(#errors, 1, "the problem is said once")

  -- The real daemon of this repository speaks the plugin's protocol in full.
  require("ctxlayer").setup({ cmd = H.cmd })
  vim.cmd("Ctxlayer restart")
  local real = H.client()
  H.must(real ~= nil, "the real daemon starts after :Ctxlayer restart")
  H.must(H.wait(function()
    return next(client.announcement(real)) ~= nil
  end), "and announces itself")
  H.eq(client.problem(real), nil, "the real daemon's announcement passes the check")
end)
