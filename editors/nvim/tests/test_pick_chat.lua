-- `:Ctxlayer chats {id}` over an assembled session: the session stays the daemon's live chat,
-- and a changed file re-measures it (a live ctx/budgetChanged of it). That re-measure took the
-- status line back from the picked chat at the next :write; the help promises a changed file
-- "re-measures it without switching chats". A request (an assembly, another chat's turn)
-- still takes over.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

--- The key of the chat the status line shows (conversation, else session), once it is `want`.
local function shows(want)
  return H.wait(function()
    local b = require("ctxlayer").budget()
    return b and b.conversation == want
  end)
end

local function prepared(text)
  return require("ctxlayer").request("ctx/prepare", { format = "openai", request = {
    model = "gpt-4o", messages = { { role = "user", content = text .. string.rep(" words", 200) } } } })
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd, gateway = false })
  vim.cmd.edit("README.md")
  local c = H.client()
  H.must(c ~= nil and H.wait_figure() ~= nil, "the daemon starts and shows a figure")
  local status = require("ctxlayer.status")
  local session = status.get(c.id).session_id
  H.must(session ~= nil, "the workspace session is open")

  local chat = prepared("hello")
  H.must(chat and chat.conversationId, "a chat through ctx/prepare", vim.inspect(chat))
  H.ok(shows(chat.conversationId), "the prepared chat is in the status line", ctxlayer.statusline())
  vim.cmd("Ctxlayer assemble")
  H.ok(shows(session), ":Ctxlayer assemble makes the session the live chat", ctxlayer.statusline())

  vim.cmd("Ctxlayer chats " .. chat.conversationId)
  H.ok(shows(chat.conversationId), ":Ctxlayer chats {id} puts the chat in the status line",
    ctxlayer.statusline())

  -- a new file: the daemon re-measures the session (the tree grew) and says so, live
  local before = status.get(c.id).chats[session].used
  H.write_file("src/added.py", { "print('a new file in the tree')" })
  H.must(H.wait(function()
    local seen = status.get(c.id).chats[session]
    return seen and seen.used ~= before
  end), "the daemon re-measured the session after the :write",
    vim.inspect(status.get(c.id).chats[session]))
  H.ok(ctxlayer.budget().conversation == chat.conversationId,
    "the picked chat stays in the status line after a :write", ctxlayer.statusline())

  -- a request still takes over: the session's assembly, then another chat's turn
  vim.cmd("Ctxlayer assemble")
  H.ok(shows(session), "an assembly takes the status line back", ctxlayer.statusline())
  vim.cmd("Ctxlayer chats " .. chat.conversationId)
  H.must(shows(chat.conversationId), "picked again")
  local other = prepared("another chat entirely")
  H.ok(other and shows(other.conversationId), "another chat's request takes over",
    ctxlayer.statusline())
end)
