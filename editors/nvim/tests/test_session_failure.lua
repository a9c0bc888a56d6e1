-- The workspace session fails to open (here the state folder is a file): the daemon's reason
-- reaches the user. Before, the plugin kept it until the next answer (the segment's, a moment
-- later) cleared it: nothing was said, :Ctxlayer status had no line for it and :Ctxlayer rule
-- sent the user to :Ctxlayer status for a reason that was no longer there.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function notes_matching(pattern)
  return vim.tbl_filter(function(n)
    return n.msg:find(pattern, 1, true) ~= nil
  end, H.notes)
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  -- the daemon inherits Neovim's environment: its state folder is a regular file
  local statefile = vim.fs.joinpath(vim.fs.dirname(H.root), "state-is-a-file")
  vim.fn.writefile({ "not a folder" }, statefile)
  vim.env.CTXLAYER_STATE_DIR = statefile

  ctxlayer.setup({ cmd = H.cmd })
  vim.cmd.edit("README.md")
  H.must(H.client() ~= nil, "the daemon starts")
  local said = H.wait(function()
    return H.note("^ctxlayer: the workspace session could not be opened")
  end)
  H.must(said ~= nil, "the failure to open the session is said", vim.inspect(H.notes))
  H.ok(said.level == vim.log.levels.ERROR and said.msg:find("ctx/session/open", 1, true) ~= nil
    and said.msg:find(statefile, 1, true) ~= nil,
    "it gives the daemon's reason, naming the state folder", said.msg)
  H.eq(#notes_matching("could not be opened"), 1, "it is said once")

  -- the segment's answer comes after the failure: the reason outlives it
  H.must(H.wait_figure() ~= nil, "the status line shows the workspace's figure",
    ctxlayer.statusline())
  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local shown = H.note("^ctxlayer: ctx ")
  H.ok(shown and shown.msg:find("session failed: ctx/session/open: ", 1, true) ~= nil
    and shown.msg:find(statefile, 1, true) ~= nil, ":Ctxlayer status gives the reason",
    shown and shown.msg)

  H.clear_notes()
  vim.cmd("Ctxlayer rule Answer in English")
  local refused = H.note("addRule")
  H.ok(refused and refused.level == vim.log.levels.ERROR
    and refused.msg:find("could not be opened: ctx/session/open", 1, true) ~= nil
    and refused.msg:find(statefile, 1, true) ~= nil,
    ":Ctxlayer rule says why there is no session", refused and refused.msg)
  H.ok(refused and refused.msg:find("see :Ctxlayer status", 1, true) == nil,
    "and does not send the user elsewhere for it", refused and refused.msg)
end)
