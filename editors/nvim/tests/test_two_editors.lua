-- Two Neovims on one folder share its session (one id per root, kept in the state folder):
-- the other one sets the mode. `:Ctxlayer refresh` and `:Ctxlayer mode` showed the mode this
-- Neovim last knew (refresh read the segment and the budget only, and no Budget carries the
-- mode); they now read the session's mode from the daemon.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

--- The other Neovim: starts its own daemon on the folder, sets `mode` on the shared session.
local OTHER = [[
vim.opt.runtimepath:prepend(vim.env.CTXLAYER_TEST_PLUGIN)
vim.cmd.runtime("plugin/ctxlayer.lua")
vim.cmd.cd(vim.fn.fnameescape(vim.env.CTXLAYER_TEST_ROOT))
local ctxlayer = require("ctxlayer")
ctxlayer.setup({ cmd = { vim.env.CTXLAYER_TEST_DAEMON, "serve" }, gateway = false })
vim.cmd.edit("README.md")
local sid
vim.wait(60000, function()
  local c = vim.lsp.get_clients({ name = "ctxlayer" })[1]
  local state = c and require("ctxlayer.status").get(c.id)
  sid = state and state.budget and state.session_id
  return sid ~= nil
end, 50)
local _, err = ctxlayer.request("ctx/session/setMode", { sessionId = sid, mode = vim.env.OTHER_MODE })
io.stdout:write(("other: session %s set to %s, error %s\n"):format(tostring(sid), vim.env.OTHER_MODE, vim.inspect(err)))
ctxlayer.stop()
os.exit(sid and not err and 0 or 1)
]]

H.run(function()
  local ctxlayer = require("ctxlayer")
  local client = require("ctxlayer.client")
  local status = require("ctxlayer.status")
  ctxlayer.setup({ cmd = H.cmd, gateway = false })
  vim.cmd.edit("README.md")
  local c = H.client()
  H.must(c ~= nil and H.wait_figure() ~= nil, "the daemon starts and shows a figure")
  local state = status.get(c.id)
  H.must(H.wait(function() return state.session_id and state.mode end), "the session is open",
    vim.inspect(state))
  local mine = state.mode
  local other = mine == "short" and "debug" or "short"
  H.ok(vim.tbl_contains(client.mode_names(c), other), "the daemon has the mode " .. other)

  local script = vim.fn.tempname() .. ".lua"
  vim.fn.writefile(vim.split(OTHER, "\n"), script)
  local env = vim.fn.environ()
  env.CTXLAYER_TEST_PLUGIN, env.OTHER_MODE = H.plugin_dir, other
  local run = vim.system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-l", script },
    { env = env, text = true }):wait(H.TIMEOUT * 2)
  H.must(run.code == 0, "the other Neovim set the mode " .. other, run.stdout .. run.stderr)
  local listed = ctxlayer.request("ctx/session/list", {})
  local held
  for _, s in ipairs(listed and listed.sessions or {}) do
    if s.sessionId == state.session_id then
      held = s.mode
    end
  end
  H.eq(held, other, "the daemon's session list says " .. other)

  H.clear_notes()
  vim.cmd("Ctxlayer refresh")
  H.ok(H.wait(function() return H.note("^ctxlayer: refreshed") end), ":Ctxlayer refresh answers",
    vim.inspect(H.notes))
  H.eq(status.get(c.id).mode, other, ":Ctxlayer refresh reads the mode the other Neovim set")

  -- the other way: the mode shown by :Ctxlayer mode is the daemon's, not the last one known
  status.update(c.id, { mode = mine })
  H.clear_notes()
  vim.cmd("Ctxlayer mode")
  local said = H.wait(function() return H.note("^ctxlayer: mode ") end)
  H.ok(said and said.msg:find("mode " .. other, 1, true) ~= nil,
    ":Ctxlayer mode says the session's mode", said and said.msg or vim.inspect(H.notes))
end)
