-- The live chat's session is closed (ctx/session/close, by any client of the daemon; no
-- notification says so). It stayed the status line's chat, and :Ctxlayer why / inspect failed
-- "unknown session". The daemon's answer now makes the plugin forget it: the command shows the
-- workspace's session, and the status line its figures.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local CHAT = "other-chat"

--- A session of another chat, assembled: the daemon's live chat.
local function live_session(ctxlayer)
  ctxlayer.request("ctx/session/open", { sessionId = CHAT, model = "gpt-4o" })
  ctxlayer.request("ctx/session/append", { sessionId = CHAT,
    messages = { { role = "user", content = string.rep("hello world ", 100) } } })
  ctxlayer.request("ctx/assemble", { sessionId = CHAT })
  return H.wait(function()
    local b = ctxlayer.budget()
    return b and b.conversation == CHAT
  end)
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  local opened = {}
  ctxlayer.setup({ cmd = H.cmd, gateway = false, open = function(path) table.insert(opened, path) end })
  vim.cmd.edit("README.md")
  local c = H.client()
  H.must(c ~= nil and H.wait_figure() ~= nil, "the daemon starts and shows a figure")
  local session = require("ctxlayer.status").get(c.id).session_id
  H.must(session ~= nil, "the workspace session is open")

  H.must(live_session(ctxlayer), "the other chat's session is the live chat", ctxlayer.statusline())
  local _, err = ctxlayer.request("ctx/session/close", { sessionId = CHAT })
  H.must(err == nil, "its session is closed", err)
  H.clear_notes()
  vim.cmd("Ctxlayer why")
  local why = H.wait(function()
    local lines = H.buffer_lines("ctxlayer://why")
    return lines and lines[1]:find("session " .. session, 1, true) and lines
  end)
  H.ok(why ~= nil, ":Ctxlayer why shows the workspace's session",
    vim.inspect(H.buffer_lines("ctxlayer://why")) .. vim.inspect(H.notes))
  H.ok(not H.note("failed"), "and says no failure", vim.inspect(H.notes))
  H.ok(ctxlayer.budget().conversation ~= CHAT, "the status line forgot the closed chat",
    ctxlayer.statusline())

  vim.cmd("edit README.md")
  H.must(live_session(ctxlayer), "the other chat's session, reopened, is live again",
    ctxlayer.statusline())
  ctxlayer.request("ctx/session/close", { sessionId = CHAT })
  H.clear_notes()
  vim.cmd("Ctxlayer inspect")
  H.ok(#opened == 1 and H.note("inspector page") ~= nil,
    ":Ctxlayer inspect opens the workspace's page", vim.inspect(H.notes))
  H.ok(not H.note("failed") and not H.note("ctx/inspect"), "and says no failure",
    vim.inspect(H.notes))
  H.ok(ctxlayer.budget().conversation ~= CHAT, "the status line forgot the closed chat again",
    ctxlayer.statusline())
end)
