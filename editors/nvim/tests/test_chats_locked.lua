--- `:Ctxlayer chats` while the state database is locked: the daemon lists the live chats
--- with a `warning` that the kept ones could not be read. The plugin showed `1 live chat`
--- and nothing else, and forgot the kept chat; it must say why the list is short, and keep it.

local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function prepare(text)
  local r, err = require("ctxlayer").request("ctx/prepare", { format = "openai", budget = 3000,
    request = { model = "gpt-4o", messages = { { role = "user", content = text } } } })
  H.must(r ~= nil, "ctx/prepare answers", err)
  return r.conversationId
end

--- The lines of `:Ctxlayer chats`, after the notes of that command only.
local function chats()
  H.clear_notes()
  local b = vim.fn.bufnr("ctxlayer://chats")
  if b ~= -1 then
    vim.api.nvim_buf_delete(b, { force = true })
  end
  vim.cmd("Ctxlayer chats")
  H.wait(function()
    return H.buffer_lines("ctxlayer://chats") or #H.notes > 0
  end)
  return H.buffer_lines("ctxlayer://chats") or {}
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd, gateway = false })
  vim.cmd.edit("README.md")
  H.must(H.client() ~= nil, "the daemon starts")
  H.wait_figure()
  -- a chat kept on disk by an earlier daemon, then a live one of this daemon
  local kept = prepare("a first chat, kept on disk " .. string.rep("x ", 30))
  vim.cmd("Ctxlayer restart")
  H.must(H.wait(function()
    local c = ctxlayer.client()
    return c and c.id ~= nil and require("ctxlayer.status").get(c.id) ~= nil
  end), "the daemon restarts")
  H.wait_figure()
  local live = prepare("a second chat, live " .. string.rep("y ", 30))
  local lines = table.concat(chats(), "\n")
  H.ok(lines:find(kept, 1, true) and lines:find(live, 1, true), "unlocked: both chats listed",
    lines)
  local state = require("ctxlayer.status").get(ctxlayer.client().id)
  H.ok(state.chats[kept] ~= nil, "the plugin knows the kept chat")

  -- hold the state database with an exclusive lock while the chats are listed
  local python = vim.fs.joinpath(vim.fs.dirname(H.daemon), "python")
  local db = vim.fs.joinpath(vim.env.CTXLAYER_STATE_DIR, "sessions.sqlite3")
  local locked = false
  local job = vim.system({ python, "-c", table.concat({
    "import sqlite3, sys, time",
    "c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)",
    "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True)",
    "sys.stdin.read(); c.execute('ROLLBACK')",
  }, "\n"), db }, { stdin = true, stdout = function(_, data)
    locked = locked or (data or ""):find("locked") ~= nil
  end })
  H.must(H.wait(function() return locked end), "the state database is locked")
  local shown = chats()
  job:write(nil)
  job:wait()
  local text = table.concat(shown, "\n")
  H.ok(text:find(live, 1, true) ~= nil, "locked: the live chat is listed", text)
  H.ok(shown[1] and shown[1]:find("listed, not the kept ones", 1, true) ~= nil,
    "locked: the count does not claim to be every chat", shown[1])
  H.ok(shown[2] and shown[2]:find("^ctxlayer: ") ~= nil and #shown[2] > 20,
    "locked: the buffer says why the kept chats are missing", shown[2])
  local note = H.note("^ctxlayer: chats: ")
  H.ok(note and note.level == vim.log.levels.WARN, "locked: a warning says so",
    vim.inspect(H.notes))
  state = require("ctxlayer.status").get(ctxlayer.client().id)
  H.ok(state.chats[kept] ~= nil, "locked: the plugin still knows the kept chat")
  H.ok(state.chats[live] ~= nil, "locked: and the live one")
end)
