-- The live chat of the status line, against the workspace's own session and a pick.
--
-- `:Ctxlayer assemble` only shows the workspace's prompt: its session is then the daemon's
-- live chat, but its figure is the workspace's, and the live chat shown stays (as VS Code's
-- status bar). Before, the assembly took the status line from the live chat (`ctx chat
-- 953/112k 1%` became `ctx chat 73/112k 0%`), and :Ctxlayer status and inspect were about
-- the workspace session.
--
-- `:Ctxlayer chats {id}` over another editor's assembled session: that session stays the
-- daemon's live chat, and a changed file re-measures it (a live ctx/budgetChanged of it). That
-- re-measure took the status line back from the picked chat at the next :write; the help
-- promises a changed file "re-measures it without switching chats". Nor does a third editor's
-- assembly take it (it did: any other session's live budget undid the pick), even when the
-- chat picked was the live one already. Another chat's request still takes over.
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
  local shown = ctxlayer.statusline()

  -- :Ctxlayer assemble: the workspace's prompt, shown; the live chat stays in the status line
  H.clear_notes()
  local budgets = H.watch_budgets()
  vim.cmd("Ctxlayer assemble")
  H.must(H.buffer_lines("ctxlayer://assembled") ~= nil, ":Ctxlayer assemble shows the prompt")
  H.must(H.wait(function()
    return vim.iter(budgets):any(function(b) return b.live == true and b.sessionId == session end)
  end), "the daemon sends the workspace session's live budget", vim.inspect(budgets))
  H.eq(ctxlayer.budget().conversation, chat.conversationId,
    "after :Ctxlayer assemble the live chat stays in the status line")
  H.eq(ctxlayer.statusline(), shown, "with its figure")
  vim.cmd("Ctxlayer status")
  local said = H.note("live chat ")
  H.ok(said and said.msg:find("live chat " .. chat.conversationId, 1, true),
    ":Ctxlayer status is about the live chat", said and said.msg)

  -- another editor's session (another id on the same daemon), assembled: a chat of its own
  local other_session = "other-editor:" .. session
  H.must(ctxlayer.request("ctx/session/open", { sessionId = other_session }) ~= nil,
    "another editor's session opens")
  H.must(ctxlayer.request("ctx/assemble", { sessionId = other_session }) ~= nil, "and assembles")
  H.ok(shows(other_session), "another editor's assembly is the live chat", ctxlayer.statusline())

  vim.cmd("Ctxlayer chats " .. chat.conversationId)
  H.ok(shows(chat.conversationId), ":Ctxlayer chats {id} puts the chat in the status line",
    ctxlayer.statusline())

  -- a new file: the daemon re-measures the other session (the tree grew) and says so, live
  local before = status.get(c.id).chats[other_session].used
  H.write_file("src/added.py", { "print('a new file in the tree')" })
  H.must(H.wait(function()
    local seen = status.get(c.id).chats[other_session]
    return seen and seen.used ~= before
  end), "the daemon re-measured the session after the :write",
    vim.inspect(status.get(c.id).chats[other_session]))
  H.ok(ctxlayer.budget().conversation == chat.conversationId,
    "the picked chat stays in the status line after a :write", ctxlayer.statusline())

  -- a third editor assembles its own session: the pick stays (the assembly is listed). Before,
  -- any other session's live budget undid the pick and the status line followed it.
  local function assembled_elsewhere(sid)
    H.must(ctxlayer.request("ctx/session/open", { sessionId = sid }) ~= nil, sid .. " opens")
    local seen = #budgets
    H.must(ctxlayer.request("ctx/assemble", { sessionId = sid }) ~= nil, sid .. " assembles")
    H.must(H.wait(function()
      for i = seen + 1, #budgets do
        if budgets[i].live == true and budgets[i].sessionId == sid then
          return true
        end
      end
    end), "the daemon marks " .. sid .. "'s budget live", vim.inspect(budgets[#budgets]))
  end
  local third = "third-editor:" .. session
  assembled_elsewhere(third)
  H.eq(ctxlayer.budget().conversation, chat.conversationId,
    "another editor's assembly leaves the picked chat in the status line")
  H.ok(status.get(c.id).chats[third] ~= nil, "and is remembered", vim.inspect(status.get(c.id).chats))

  -- another chat's request still takes over
  local other = prepared("another chat entirely")
  H.ok(other and shows(other.conversationId), "another chat's request takes over",
    ctxlayer.statusline())

  -- picking the chat that is live already holds too
  vim.cmd("bwipeout! " .. vim.fn.bufnr("ctxlayer://chats"))
  vim.cmd("Ctxlayer chats " .. other.conversationId)
  H.must(H.wait(function()
    return H.buffer_lines("ctxlayer://chats")
  end), ":Ctxlayer chats {id} of the live chat answers")
  assembled_elsewhere("fourth-editor:" .. session)
  H.eq(ctxlayer.budget().conversation, other.conversationId,
    "an assembly elsewhere leaves the picked live chat in the status line")
end)
