-- A live chat through ctx/prepare (what a chat plugin calls when it talks to the daemon
-- instead of the gateway): the daemon's ctx/budgetChanged with the conversationId moves the
-- status line to that chat, :Ctxlayer chats lists it, :Ctxlayer why says what its last turn cut,
-- and a compaction is announced in one line. The gateway path is test_live_chat.lua.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

--- The status line once it shows a live chat other than `not_this` (a conversationId).
local function wait_chat(not_this)
  return H.wait(function()
    local b = require("ctxlayer").budget()
    if b and b.conversation and b.conversation ~= not_this and require("ctxlayer").statusline():match("^ctx chat ") then
      return b
    end
  end)
end

--- `turns` user/assistant pairs of distinct, fact-heavy text (nothing for dedup to fold).
local function chat(turns, system)
  local messages = { { role = "system", content = system } }
  for i = 1, turns do
    local lines = {}
    for j = 1, 12 do
      lines[j] = ("step %d.%d: job %d finished in %d ms on host h%d (exit %d)"):format(i, j, i * 100 + j, (i * 37 + j * 11) % 997, j % 5, (i + j) % 3)
    end
    table.insert(messages, { role = "user", content = ("Log %d:\n%s\nWhat failed in log %d?"):format(i, table.concat(lines, "\n"), i) })
    table.insert(messages, { role = "assistant", content = ("In log %d, job %d exited with code 2."):format(i, i * 100 + 3) })
  end
  table.insert(messages, { role = "user", content = "Which job was the slowest overall?" })
  return messages
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd })
  vim.cmd.edit("README.md")
  local client = H.client()
  H.must(client ~= nil, "the daemon started")
  local status = require("ctxlayer.status")
  local workspace_figure = H.wait_figure()
  H.must(workspace_figure ~= nil, "before any chat, the status line shows the workspace figure")

  -- A first short chat.
  local first, err = ctxlayer.request("ctx/prepare", {
    format = "openai",
    request = { model = "gpt-4o", messages = { { role = "system", content = "You are terse." }, { role = "user", content = "What does src/app.py print?" } } },
  })
  H.must(first ~= nil, "ctx/prepare answers", err)
  local live = wait_chat()
  H.must(live ~= nil, "the status line moves to the chat's figure", ctxlayer.statusline())
  H.eq(live.conversation, first.conversationId, "it is that conversation")
  H.eq(live.source, "prepare", "the figure's source is ctx/prepare")
  H.eq(live.used, first.tokens, "used is what the chat sends")
  H.ok(live.limit > live.used, "against the chat's limit", vim.inspect(live))
  H.ok(ctxlayer.statusline() ~= workspace_figure, "not the workspace figure", ctxlayer.statusline())
  H.ok(ctxlayer.statusline({ highlight = true }):match("^%%#Ctxlayer%a+#ctx chat ") ~= nil, "drawn in a ctxlayer colour")
  H.eq(status.extras({ cached = 4100, band = 0.021 }), " (4.1k cached, ±2%)", "cached tokens and the error band read after the figure")
  H.eq(status.extras({ cached = 0, band = 0.004 }), "", "nothing to add when neither is known")

  -- A long chat into a small budget: its last turn cuts, and :Ctxlayer why says what and why.
  H.clear_notes()
  local long, lerr = ctxlayer.request("ctx/prepare", {
    format = "openai",
    budget = 1500,
    request = { model = "gpt-4o", messages = chat(30, "You are a build assistant.") },
  })
  H.must(long ~= nil, "ctx/prepare fits the long chat", lerr)
  local now = wait_chat(first.conversationId)
  H.must(now ~= nil and now.conversation == long.conversationId, "the status line follows the chat that last went through", vim.inspect(now))
  H.ok(now.used <= now.limit, "what is sent fits the limit", vim.inspect(now))

  local why, cuts = H.why(long.conversationId)
  H.ok(#cuts > 0 and why[2]:find("): ", 1, true) ~= nil, "each with what it was and why", table.concat(why, "\n"))

  -- The compaction notice is the daemon's own line, sent with that request's budget: shown
  -- once, with one "ctxlayer:" prefix, and no ctx/why asked to find out.
  H.must(long.notice ~= nil and long.notice ~= vim.NIL, "the long turn cut or summarized something", vim.inspect(long))
  local shown_notice = H.wait(function()
    return H.note("^" .. vim.pesc(long.notice) .. "$")
  end)
  H.ok(shown_notice ~= nil, "the daemon's notice is shown as it came", long.notice)
  H.ok(not long.notice:find("ctxlayer: ctxlayer:", 1, true), "with one prefix", long.notice)
  local asked = {}
  local rpc = require("ctxlayer.client")
  local request = rpc.request
  rpc.request = function(c, method, ...)
    table.insert(asked, method)
    return request(c, method, ...)
  end

  -- The same chat again, one turn longer: a turn that summarizes nothing new says nothing.
  local again_messages = chat(30, "You are a build assistant.")
  table.insert(again_messages, { role = "assistant", content = "Job 2903 was the slowest." })
  table.insert(again_messages, { role = "user", content = "Thanks. Which host ran it?" })
  H.clear_notes()
  local again = ctxlayer.request("ctx/prepare", { format = "openai", budget = 1500, conversationId = long.conversationId,
    request = { model = "gpt-4o", messages = again_messages } })
  H.must(again ~= nil and again.conversationId == long.conversationId, "the next turn is the same conversation")
  H.wait(function()
    local b = ctxlayer.budget()
    return b and b.used == again.tokens
  end)
  local notices = vim.tbl_filter(function(n)
    return n.msg:match("^ctxlayer: [a-z]") and not n.msg:match("^ctxlayer: ctx ")
  end, H.notes)
  H.eq(#notices, (again.notice ~= nil and again.notice ~= vim.NIL) and 1 or 0, "a notice exactly when the daemon sent one")
  H.eq(vim.tbl_filter(function(m) return m == "ctx/why" end, asked), {}, "no ctx/why asked after the budget updates")
  rpc.request = request

  -- A file created during the chat: the workspace is re-measured, the status line stays on
  -- the chat (the daemon keeps the live chat's identity; a prepared chat carries no workspace).
  local on_chat = ctxlayer.statusline()
  local version = (status.get(client.id).segment or {}).version or 0
  H.write_file("NOTES.md", { "# Notes", "", "A file created while the chat is live." })
  H.ok(H.wait(function()
    local seg = (status.get(client.id) or {}).segment
    return seg and (seg.version or 0) > version
  end), "the workspace segment changed")
  local b = ctxlayer.budget()
  H.ok(b and b.conversation == again.conversationId, "the status line is still on the chat", vim.inspect(b))
  H.eq(ctxlayer.statusline(), on_chat, "with the chat's figure")

  -- :Ctxlayer status: the live chat's figure, its layers and its window; :Ctxlayer inspect
  -- opens the page of that chat's session; :Ctxlayer mode says the chat is not affected.
  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local st = H.note("^ctxlayer: ctx chat ")
  local st_text = st and st.msg or ""
  H.ok(st_text:find("used " .. again.tokens .. " of ", 1, true) ~= nil, ":Ctxlayer status shows the chat's use", st_text)
  H.ok(st_text:find("session chat-", 1, true) ~= nil, "and the chat's session", st_text)
  H.ok(st_text:find("model window 128k tokens", 1, true) ~= nil, "and the model's window", st_text)
  local opened = {}
  require("ctxlayer.config").current.open = function(path)
    table.insert(opened, path)
  end
  vim.cmd("Ctxlayer inspect")
  local page = #opened == 1 and table.concat(vim.fn.readfile(opened[1]), "\n") or ""
  H.ok(page:find("Job 2903 was the slowest.", 1, true) ~= nil, ":Ctxlayer inspect opens the live chat's page", #page)
  H.clear_notes()
  vim.cmd("Ctxlayer mode short")
  local moded = H.wait(function()
    return H.note("^ctxlayer: mode short for session ")
  end)
  H.ok(moded and moded.msg:find("the live chat " .. again.conversationId .. " is not affected", 1, true) ~= nil,
    ":Ctxlayer mode says which session it changed, not the chat's figure", moded and moded.msg)

  -- :Ctxlayer chats lists both, the live one marked; picking the first makes it live.
  vim.cmd("Ctxlayer chats")
  local listed = H.wait(function()
    local lines = H.buffer_lines("ctxlayer://chats")
    return lines and lines[1]:match("^2 live chats") and lines
  end)
  local text = listed and table.concat(listed, "\n") or table.concat(H.buffer_lines("ctxlayer://chats") or {}, "\n")
  H.ok(listed ~= nil, ":Ctxlayer chats lists the two chats", text)
  H.ok(text:find("* " .. long.conversationId, 1, true) ~= nil, "the live one is marked", text)
  H.ok(text:find("  " .. first.conversationId, 1, true) ~= nil, "the other is listed unmarked", text)
  vim.cmd("Ctxlayer chats " .. first.conversationId)
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.conversation == first.conversationId
  end), ":Ctxlayer chats ID puts that chat in the status line")
  H.clear_notes()
  vim.cmd("Ctxlayer chats no-such-chat")
  H.ok(H.wait(function()
    return H.note('no live chat "no%-such%-chat"')
  end), "an unknown chat id is named")

  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local shown = H.note("^ctxlayer: ctx chat ")
  H.ok(shown and shown.msg:find("live chat " .. first.conversationId, 1, true) ~= nil, ":Ctxlayer status names the live chat", shown and shown.msg)

  -- The daemon's warning beside a request (its state folder failed; the request went all the
  -- same) comes with a chat's budget, live or not: shown once per text, as a warning.
  H.clear_notes()
  local handler = require("ctxlayer.handlers")["ctx/budgetChanged"]
  local client = vim.lsp.get_clients({ name = "ctxlayer" })[1]
  local full = "the state folder could not keep this turn's audit: the disk is full"
  for _, live in ipairs({ false, true, false }) do
    handler(nil, { used = 10, limit = 100, percent = 10, model = "gpt-4o", conversationId = "c-w",
      live = live, warning = full, byLayer = { system = 0, history = 10 } }, { client_id = client.id })
  end
  local warned = vim.tbl_filter(function(n)
    return n.msg == "ctxlayer: " .. full
  end, H.notes)
  H.eq(#warned, 1, "the warning is shown once")
  H.eq(warned[1] and warned[1].level, vim.log.levels.WARN, "as a warning")
end)
