--- ctxlayer.commands: the `:Ctxlayer {subcommand}` implementations and their completion.
---
--- Owns what each subcommand does and shows (messages, scratch buffers, the inspector page).
--- It asks the daemon through client.lua and updates status.lua; it holds no state of its own.

local client = require("ctxlayer.client")
local config = require("ctxlayer.config")
local status = require("ctxlayer.status")

local M = {}

local function info(msg)
  vim.notify("ctxlayer: " .. msg, vim.log.levels.INFO)
end

local function fail(msg)
  vim.notify("ctxlayer: " .. msg, vim.log.levels.ERROR)
end

--- The running client, or nil after saying how to start one.
function M.running()
  local c = client.get()
  if not c then
    local failed = status.failure(0)
    fail("not running for this buffer; open a file in a workspace or run :Ctxlayer start"
      .. (failed and ("\n" .. failed) or ""))
  end
  return c
end

local function need_session(c, method)
  local state = status.get(c.id)
  if state and state.session_error and not state.session_id then
    fail(("%s needs the workspace's session, which could not be opened: %s"):format(
      method, state.session_error))
    return nil
  end
  if not (state and state.session_id) then
    fail(("%s needs the workspace's session; none is open (setup with session = false)"):format(method))
    return nil
  end
  return state.session_id
end

--- A scratch buffer named `name` showing `lines` of client `c`'s workspace, in a split (reused
--- on the next call). It belongs to that workspace (b:ctxlayer_root, read by status.lua): its
--- status line and the commands typed in it go to that workspace's daemon, not another's.
function M.scratch(name, lines, filetype, c)
  local bufnr = vim.fn.bufnr(name)
  if bufnr == -1 then
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(bufnr, name)
    vim.bo[bufnr].bufhidden = "hide"
  end
  vim.b[bufnr].ctxlayer_root = c and c.root_dir or nil
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].filetype = filetype or "markdown"
  if vim.fn.bufwinid(bufnr) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, bufnr)
  end
  return bufnr
end

local function split_lines(text)
  return vim.split(text or "", "\n", { plain = true })
end

--- Lines describing the budget: figures, layers, segment parts, the last trim.
function M.status_lines(c)
  local state = status.get(c.id) or {}
  local lines = {}
  local f = status.figures(state)
  table.insert(lines, ("%s (client %d, root %s)"):format(status.text(), c.id, state.root or c.root_dir or "?"))
  if f then
    if f.percent then
      table.insert(lines, ("used %d of %d tokens (%.1f%%, %s)"):format(f.used, f.limit, f.percent, f.source))
    else
      table.insert(lines, ("used %d of %d tokens (%s)"):format(f.used, f.limit, f.source))
    end
  end
  if f and f.conversation then
    table.insert(lines, ("live chat %s%s (:Ctxlayer chats, :Ctxlayer why)"):format(f.conversation, status.extras(f)))
  end
  -- Model, layers and compaction of the figure shown: the live chat's when there is one, so
  -- the layers add up to the "used" above.
  local b = f and f.budget
  local own = not (f and f.conversation)
  table.insert(lines, ("model %s, mode %s%s"):format(
    (b and b.model) or state.model or "default",
    state.mode or client.announcement(c).defaultMode or "default",
    own and state.session_id and (", session " .. state.session_id)
      or (b and b.sessionId and b.sessionId ~= vim.NIL and (", session " .. b.sessionId) or "")
  ))
  if b and b.byLayer then
    local parts = {}
    for _, layer in ipairs({ "system", "workspace", "rules", "working", "history" }) do
      table.insert(parts, ("%s %s"):format(layer, status.human(b.byLayer[layer] or 0)))
    end
    table.insert(lines, "layers: " .. table.concat(parts, ", "))
    if b.window and b.window ~= vim.NIL then
      table.insert(lines, ("model window %s tokens"):format(status.human(b.window)))
    end
    if b.nextCompactionAt and b.nextCompactionAt ~= vim.NIL then
      table.insert(lines, ("next compaction at %s tokens"):format(status.human(b.nextCompactionAt)))
    end
  end
  if state.segment then
    local parts = {}
    for _, p in ipairs(state.segment.parts or {}) do
      table.insert(parts, ("%s %s"):format(p.name, status.human(p.tokens)))
    end
    table.insert(lines, ("workspace segment %s tokens (version %s)%s"):format(
      status.human(state.segment.tokens), tostring(state.segment.version),
      #parts > 0 and (": " .. table.concat(parts, ", ")) or ""
    ))
  end
  if state.last_trim then
    local t = state.last_trim
    table.insert(lines, ("last trim: %d of %d tokens, %d dropped, %d truncated"):format(
      t.tokens, t.budget, #(t.dropped or {}), #(t.truncated or {})
    ))
  end
  if state.session_error then
    table.insert(lines, "session failed: " .. state.session_error)
  end
  if state.error then
    table.insert(lines, "last error: " .. state.error)
  end
  return lines
end

--- The assembled prompt of the workspace's session, or the system prompt when the plugin
--- opened no session (opts.session = false): result, err.
function M.assembled(opts)
  local c = client.get()
  if not c then
    return nil, "ctxlayer is not running for this buffer"
  end
  local state = status.get(c.id) or {}
  if state.session_id then
    -- a request of the workspace's session: the daemon's live chat from now on, the status
    -- line's figure stays its own (handlers.lua), and the live chat shown stays shown
    local params = vim.tbl_extend("force", { sessionId = state.session_id, budget = status.usable_budget(state, config.current.budget) }, opts or {})
    local result, err = client.request_sync(c, "ctx/assemble", params)
    if result and result.modeSuggestion then
      status.update(c.id, { mode_suggestion = result.modeSuggestion })
    end
    return result, err
  end
  return client.request_sync(c, "ctx/systemPrompt", vim.tbl_extend("force", { model = config.current.model }, opts or {}))
end

local function render_messages(result)
  local lines = {}
  local total = type(result.tokens) == "table" and result.tokens.total or result.tokens
  table.insert(lines, ("<!-- ctxlayer: %d messages, %s tokens%s -->"):format(
    #result.messages, tostring(total),
    result.cacheBoundary ~= vim.NIL and result.cacheBoundary and (", cache boundary before message " .. (result.cacheBoundary + 1)) or ""
  ))
  for i, m in ipairs(result.messages) do
    if result.cacheBoundary ~= vim.NIL and result.cacheBoundary == i - 1 then
      table.insert(lines, "")
      table.insert(lines, "<!-- cache boundary: dynamic content below -->")
    end
    table.insert(lines, "")
    table.insert(lines, ("## %s%s"):format(m.role, m.id and m.id ~= vim.NIL and (" (" .. m.id .. ")") or ""))
    table.insert(lines, "")
    vim.list_extend(lines, split_lines(m.content))
  end
  return lines
end

M.subcommands = {}

M.subcommands.status = {
  desc = "show the budget, layers, segment and last trim",
  run = function()
    local c = M.running()
    if c then
      info(table.concat(M.status_lines(c), "\n"))
    end
  end,
}

M.subcommands.refresh = {
  desc = "ask the daemon for the segment and budget again",
  run = function()
    local c = M.running()
    if not c then
      return
    end
    client.refresh(c, function(state)
      local f = status.figures(state)
      info(f and ("refreshed: %s"):format(status.text()) or "refreshed")
    end)
  end,
}

M.subcommands.mode = {
  desc = "show or set the mode (the daemon's modes, e.g. short, deep, debug)",
  complete = function()
    return client.mode_names(client.get())
  end,
  run = function(args)
    local c = M.running()
    if not c then
      return
    end
    local state = status.get(c.id) or {}
    local mode = args[1]
    if not mode then
      local function show()
        state = status.get(c.id) or {}
        local suggestion = state.mode_suggestion
        local names = client.mode_names(c)
        info(("mode %s%s%s"):format(
          state.mode or client.announcement(c).defaultMode or "default",
          suggestion and (" (suggested: %s, %s)"):format(suggestion.mode, suggestion.reason) or "",
          #names > 0 and ("; modes: " .. table.concat(names, ", ")) or ""
        ))
      end
      -- the daemon's: another editor on this folder shares the session and may have set it
      if state.session_id then
        client.take_mode(c, state.session_id, client.request_sync(c, "ctx/session/list", {}))
      end
      return show()
    end
    local names = client.mode_names(c)
    if #names > 0 and not vim.tbl_contains(names, mode) then
      fail(("mode: expected one of %s, got %q"):format(table.concat(names, ", "), mode))
      return
    end
    local session = need_session(c, "ctx/session/setMode")
    if not session then
      return
    end
    client.request(c, "ctx/session/setMode", { sessionId = session, mode = mode }, function(budget)
      config.current.mode = mode
      status.update(c.id, { mode = mode, budget = budget })
      info(M.mode_line(status.get(c.id) or {}, mode, session, budget))
    end)
  end,
}

--- What :Ctxlayer mode says once set: the figure of the session the mode applies to, and
--- whether the live chat is that session (a gateway or ctx/prepare chat is fitted to its own
--- budget, modes do not apply to it).
function M.mode_line(state, mode, session, budget)
  local line = ("mode %s for session %s: %s / %s tokens"):format(
    mode, session, status.human(budget.used), status.human(budget.limit))
  local chat = state.chat
  if chat and chat.sessionId ~= session then
    local cid = chat.conversationId ~= vim.NIL and chat.conversationId or chat.sessionId
    line = line .. (" (the live chat %s is not affected)"):format(cid)
  end
  return line
end

M.subcommands.rule = {
  desc = "add a rule to the session: :Ctxlayer rule [weight=N] text",
  run = function(args)
    local c = M.running()
    if not c then
      return
    end
    local weight = 1.0
    if args[1] and args[1]:match("^weight=") then
      local given = args[1]:sub(8)
      weight = tonumber(given)
      table.remove(args, 1)
      -- 1e999 reads as infinity, which JSON cannot carry: the request would raise
      if not weight or weight ~= weight or math.abs(weight) == math.huge then
        fail(("rule: weight must be a finite number, e.g. weight=2, got %q"):format(given))
        return
      end
    end
    local text = table.concat(args, " ")
    if text == "" then
      fail("rule: give the rule's text, e.g. :Ctxlayer rule Answer in English")
      return
    end
    local session = need_session(c, "ctx/session/addRule")
    if not session then
      return
    end
    client.request(c, "ctx/session/addRule", { sessionId = session, rule = { text = text, weight = weight } }, function(result)
      local demoted = result.demoted or {}
      info(("rule %s added%s%s"):format(
        result.ruleId,
        #demoted > 0 and (", demoted " .. table.concat(demoted, ", ")) or "",
        result.warning and result.warning ~= vim.NIL and (" (" .. result.warning .. ")") or ""
      ))
      client.refresh(c)
    end)
  end,
}

M.subcommands.inspect = {
  desc = "open the context picture (the inspector page; `text` for a buffer)",
  complete = function()
    return { "text" }
  end,
  run = function(args)
    local c = M.running()
    if not c then
      return
    end
    local state = status.get(c.id) or {}
    -- The page shows the live chat (its session holds what it sent), else the workspace's
    -- session, else the last trimmed chat.
    local chat = state.chat and state.chat.sessionId ~= vim.NIL and state.chat.sessionId or nil
    local params = chat and { sessionId = chat }
      or state.session_id and { sessionId = state.session_id }
      or state.last_trim and { messages = state.last_trim.messages, budget = state.last_trim.budget }
    if params and args[1] ~= "text" then
      local result, err, refusal = client.request_sync(c, "ctx/inspect", params)
      if not result and chat and state.session_id
        and require("ctxlayer.chats").forget_gone(c, refusal) then
        -- the live chat's session was closed: the workspace's session instead
        result, err = client.request_sync(c, "ctx/inspect", { sessionId = state.session_id })
      end
      if not result then
        fail(err)
        return
      end
      local html = type(result) == "table" and result.html or result
      local path = vim.fs.joinpath(vim.fn.stdpath("cache"), "ctxlayer-inspect.html")
      vim.fn.mkdir(vim.fs.dirname(path), "p")
      vim.fn.writefile(split_lines(html), path)
      local open = config.current.open or vim.ui.open
      open(path)
      info("inspector page: " .. path)
      return
    end
    local lines = M.status_lines(c)
    if state.last_trim and #(state.last_trim.dropped or {}) > 0 then
      table.insert(lines, "")
      table.insert(lines, "dropped by the last trim:")
      for _, d in ipairs(state.last_trim.dropped) do
        table.insert(lines, ("- %s: %s (%d tokens) %s"):format(d.action, d.summary, d.tokensBefore, d.reason))
      end
    end
    M.scratch("ctxlayer://inspect", lines, "markdown", c)
  end,
}

M.subcommands.assemble = {
  desc = "show the assembled prompt in a buffer",
  run = function()
    local c = M.running()
    if not c then
      return
    end
    local result, err = M.assembled()
    if not result then
      fail(err)
      return
    end
    M.scratch("ctxlayer://assembled", render_messages(result), "markdown", c)
  end,
}

M.subcommands.start = {
  desc = "start the daemon for this buffer's workspace",
  run = function()
    local id = client.start(vim.api.nvim_get_current_buf(), { root = client.root(0) or vim.fn.getcwd() })
    if id then
      info(("started (client %d)"):format(id))
    end
  end,
}

M.subcommands.stop = {
  desc = "stop the daemon",
  run = function()
    info(("stopped %d client(s)"):format(client.stop()))
  end,
}

M.subcommands.restart = {
  desc = "restart the daemon",
  run = function()
    local id = client.restart()
    info(id and ("restarted (client %d)"):format(id) or "not restarted: no workspace here")
  end,
}

-- The live chat's subcommands (gateway, chats, why) live in chat_commands.lua.
for name, sub in pairs(require("ctxlayer.chat_commands")) do
  M.subcommands[name] = sub
end

M.subcommands.log = {
  desc = "open Neovim's LSP log (the daemon's stderr goes there)",
  run = function()
    vim.cmd.split(vim.fn.fnameescape(client.log_paths().lsp))
  end,
}

--- Run `:Ctxlayer {fargs}`.
function M.run(cmd)
  local name = cmd.fargs[1] or "status"
  local sub = M.subcommands[name]
  if not sub then
    fail(("unknown subcommand %q; one of: %s"):format(name, table.concat(M.names(), ", ")))
    return
  end
  sub.run(vim.list_slice(cmd.fargs, 2), cmd)
end

function M.names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

--- Completion for `:Ctxlayer`: subcommands, then each subcommand's own arguments.
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = true })
  local has_trailing_space = cmdline:match("%s$") ~= nil
  local n = #words + (has_trailing_space and 1 or 0)
  local candidates = {}
  if n <= 2 then
    candidates = M.names()
  else
    local sub = M.subcommands[words[2]]
    candidates = sub and sub.complete and sub.complete() or {}
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, candidates)
end

return M
