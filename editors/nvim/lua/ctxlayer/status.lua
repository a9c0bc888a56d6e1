--- ctxlayer.status: what the daemon last told us about the budget, and how it is displayed.
---
--- Owns one state table per client (root, segment, session budget, last trim, limit), the
--- workspaces whose daemon failed, which client serves a buffer, and the status line text. It
--- never sends requests: client.lua and commands.lua feed it, and every change redraws the
--- status lines and fires `User CtxlayerStatus`.

local M = {}

---@class ctxlayer.State
---@field root string
---@field limit? integer tokens the assembled prompt may use
---@field model? string
---@field segment? table last WorkspaceSegment or ctx/segmentChanged
---@field budget? table last Budget (sessions)
---@field last_trim? table last ctx/trim result summary {tokens, budget, dropped, truncated}
---@field session_id? string
---@field mode? string
---@field mode_suggestion? table
---@field error? string the last request's failure (the next answer clears it)
---@field session_error? string|false why the workspace session failed to open or to take the
---options (false once it opened or took them since)
---@field budget_refused? boolean the daemon refused opts.budget (over the model's window)
---@field reserve_refused? boolean the daemon refused opts.reserve_output (no room left): trim leaves it out
---@field chat? table Budget of the live chat: the conversation that last went through the daemon
---@field chats? table<string, table> Budget of each conversation seen, by conversationId
---@field gateway? table the gateway's {openai, anthropic} URLs when the daemon runs it
---@field picked? {key: string} the chat `:Ctxlayer chats {id}` put in the status line, held
---there against assembled sessions' budgets until a conversation's request (chats.lua)

---@type table<integer, ctxlayer.State>
M.by_client = {}

function M.get(client_id)
  return M.by_client[client_id]
end

function M.ensure(client_id, root)
  local state = M.by_client[client_id]
  if not state then
    state = { root = root }
    M.by_client[client_id] = state
  end
  if root then
    M.failed[root] = nil -- a daemon of the workspace answers again
  end
  return state
end

--- Workspace roots whose daemon failed (it could not be started, or it ended unasked): what
--- was said, by root. Their buffers show `ctx !` until a daemon of the root answers.
---@type table<string, string>
M.failed = {}

function M.fail(root, message)
  if root then
    M.failed[root] = message
    M.changed(nil)
  end
end

function M.forget(client_id)
  M.by_client[client_id] = nil
  M.changed(client_id)
end

--- Redraw status lines and tell listeners (the lualine component, user autocmds).
function M.changed(client_id)
  vim.schedule(function()
    pcall(vim.cmd.redrawstatus, { bang = true })
    vim.api.nvim_exec_autocmds("User", {
      pattern = "CtxlayerStatus",
      modeline = false,
      data = { client_id = client_id, status = M.by_client[client_id] },
    })
  end)
end

function M.update(client_id, fields)
  local state = M.by_client[client_id]
  if not state then
    return
  end
  for k, v in pairs(fields) do
    state[k] = v
  end
  if fields.error == nil then
    state.error = nil
  end
  M.changed(client_id)
end

--- The budget option to send beside a request, or nil for the session's (or the model's
--- default): a budget the daemon refused (over the model's window) would fit the prompt to more
--- than the model takes, and the status line would show the refused figure as the limit.
---@param state? ctxlayer.State
---@param budget? integer the option (config.current.budget)
function M.usable_budget(state, budget)
  if state and state.budget_refused then
    return nil
  end
  return budget
end

--- Tokens as people read them: 950, 42.1k, 128k, 1.05M.
function M.human(n)
  if n < 1000 then
    return tostring(math.floor(n))
  elseif n < 100000 then
    return (("%.1f"):format(n / 1000):gsub("%.0$", "")) .. "k"
  elseif math.floor(n / 1000 + 0.5) < 1000 then -- 999,600 reads 1M, not 1000k
    return ("%dk"):format(math.floor(n / 1000 + 0.5))
  end
  return (("%.2f"):format(n / 1000000):gsub("0+$", ""):gsub("%.$", "")) .. "M"
end

--- The figures shown for one client: {used, limit, percent, source}.
--- With a session the daemon's Budget is the truth; without one, the last trimmed chat's
--- figure (the daemon's), else the workspace segment's tokens with no percent.
function M.figures(state)
  if not state then
    return nil
  end
  if state.chat then
    -- A live chat is what the model really receives: it wins over the workspace's figure.
    local c = state.chat
    local cid = c.conversationId ~= vim.NIL and c.conversationId or nil
    return {
      used = c.used,
      limit = c.limit,
      percent = c.percent, -- the daemon's: the editor computes no percentages
      source = c.source ~= vim.NIL and c.source or "session",
      conversation = cid or c.sessionId,
      budget = c,
      cached = c.cachedTokens ~= vim.NIL and c.cachedTokens or nil,
      band = c.errorBand ~= vim.NIL and c.errorBand or nil,
    }
  end
  if state.budget then
    local b = state.budget
    return { used = b.used, limit = b.limit, percent = b.percent, source = "session", budget = b }
  end
  if state.session_id and not state.error then
    return nil -- the session's budget is on its way: no other figure meanwhile
  end
  if state.last_trim then
    -- The last trimmed chat is what the model receives: its figure, the daemon's percent.
    local t = state.last_trim
    return { used = t.tokens, limit = t.budget, percent = t.percent, source = "trim" }
  end
  if not state.segment or not state.limit then
    return nil
  end
  -- Before any chat: the workspace segment's tokens; no percent (the daemon gave none).
  return { used = state.segment.tokens, limit = state.limit, source = "segment" }
end

--- What a live chat adds after its figure: " (4.1k cached, ±2%)", or "" when neither is known.
--- The band is the spread of the provider's billed counts around ours (a fraction).
function M.extras(f)
  local parts = {}
  if f.cached and f.cached > 0 then
    table.insert(parts, M.human(f.cached) .. " cached")
  end
  local band = f.band and math.floor(f.band * 100 + 0.5) or 0
  if band > 0 then
    table.insert(parts, ("±%d%%"):format(band))
  end
  return #parts > 0 and (" (" .. table.concat(parts, ", ") .. ")") or ""
end

--- warn from 70%, error from 90% (the VS Code status bar uses the same bands).
function M.level(percent)
  if percent >= 90 then
    return "error"
  elseif percent >= 70 then
    return "warn"
  end
  return "ok"
end

--- The daemon's percent as the status line shows it: whole, rounded half up (89.5 reads 90%).
function M.shown_percent(percent)
  return math.floor(percent + 0.5)
end

--- The level of a figure: by the daemon's percent as shown (a figure that reads "90%" is red,
--- whatever decimal the daemon sent), else (the workspace segment's figure, which has none) by
--- used over limit, so that a figure over its budget is never coloured ok. The share only
--- picks the colour: no percent is shown that the daemon did not give.
function M.figure_level(f)
  local percent = f.percent and M.shown_percent(f.percent)
  if not percent and f.limit and f.limit > 0 then
    percent = f.used / f.limit * 100
  end
  return M.level(percent or 0)
end

M.highlights = { ok = "CtxlayerOk", warn = "CtxlayerWarn", error = "CtxlayerError" }

function M.define_highlights()
  vim.api.nvim_set_hl(0, "CtxlayerOk", { link = "DiagnosticOk", default = true })
  vim.api.nvim_set_hl(0, "CtxlayerWarn", { link = "DiagnosticWarn", default = true })
  vim.api.nvim_set_hl(0, "CtxlayerError", { link = "DiagnosticError", default = true })
end

--- Whether `path` is `root` or under it.
local function within(path, root)
  path = vim.fs.normalize(path)
  root = vim.fs.normalize(root)
  return path == root or vim.startswith(path, root:gsub("/$", "") .. "/")
end

--- The roots among `roots` a buffer belongs to. A file: the root holding it. A buffer of no
--- file: a scratch view the plugin made (ctxlayer://chats, ...) belongs to the workspace it
--- was made for (b:ctxlayer_root, set by commands.scratch); any other (a new buffer, help, a
--- terminal) to the workspace holding Neovim's current directory, else to the only workspace
--- there is. With several and none holding the cwd, to none: another workspace's figures, or
--- a command sent to its session, would pass for the buffer's own.
---@param roots string[]
---@return string[]
local function roots_of(bufnr, roots)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype == "" and name ~= "" then
    local path = vim.fn.fnamemodify(name, ":p")
    return vim.tbl_filter(function(root)
      return within(path, root)
    end, roots)
  end
  local made_for = vim.b[bufnr].ctxlayer_root
  if type(made_for) == "string" then
    return vim.tbl_filter(function(root)
      return vim.fs.normalize(root) == vim.fs.normalize(made_for)
    end, roots)
  end
  local cwd = vim.fn.getcwd()
  local holding = vim.tbl_filter(function(root)
    return within(cwd, root)
  end, roots)
  if #holding == 0 and #roots == 1 then
    return roots
  end
  return holding
end

local function buffer(bufnr)
  return (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
end

--- The filetypes of the chat plugins the ready-made setups send through the gateway
--- (setups.lua): CodeCompanion's chat, avante's sidebar (Avante, AvanteInput, ...),
--- CopilotChat's, gp.nvim's chat files (markdown.gpchat).
local CHAT_FILETYPES = { codecompanion = true, ["copilot-chat"] = true, gpchat = true }

--- Whether a buffer is a chat plugin's (any part of a dotted filetype names one).
function M.is_chat(bufnr)
  for _, ft in ipairs(vim.split(vim.bo[bufnr].filetype, ".", { plain = true })) do
    if CHAT_FILETYPES[ft] or vim.startswith(ft, "Avante") then
      return true
    end
  end
  return false
end

--- The client in use among `clients`: the one of the workspace last entered (M.last_root),
--- else the newest; nil for none.
---@param clients vim.lsp.Client[]
function M.in_use(clients)
  local newest
  for _, c in ipairs(clients) do
    if c.root_dir == M.last_root then
      return c
    end
    if not newest or c.id > newest.id then
      newest = c
    end
  end
  return newest
end

--- The ctxlayer clients that may serve a buffer: those attached to it, else those of its
--- workspace (roots_of: a file not attached yet, a scratch view, a buffer of no file). A chat
--- plugin's buffer of no workspace: the client in use, whose gateway its requests go to
--- (gateway.lua asks the same), so its status line shows the figure of the daemon that has its
--- chat; before, with several workspaces and the cwd in none, it showed nothing. None for
--- any other buffer outside every workspace a daemon serves: another workspace's figures
--- would pass for its own.
---@return vim.lsp.Client[]
function M.serving_clients(bufnr)
  bufnr = buffer(bufnr)
  local attached = vim.lsp.get_clients({ name = "ctxlayer", bufnr = bufnr })
  if #attached > 0 or not vim.api.nvim_buf_is_valid(bufnr) then
    return attached
  end
  local clients = vim.tbl_filter(function(c)
    return c.root_dir ~= nil
  end, vim.lsp.get_clients({ name = "ctxlayer" }))
  local roots = {}
  for _, c in ipairs(clients) do
    roots[c.root_dir] = true
  end
  local of_buffer = {}
  for _, root in ipairs(roots_of(bufnr, vim.tbl_keys(roots))) do
    of_buffer[root] = true
  end
  local serving = vim.tbl_filter(function(c)
    return of_buffer[c.root_dir] == true
  end, clients)
  if #serving == 0 and M.is_chat(bufnr) then
    return { M.in_use(clients) }
  end
  return serving
end

--- What was said when the daemon of a buffer's workspace failed (M.failed), or nil.
function M.failure(bufnr)
  bufnr = buffer(bufnr)
  if not next(M.failed) or not vim.api.nvim_buf_is_valid(bufnr) then
    return nil
  end
  local roots = vim.tbl_keys(M.failed)
  table.sort(roots)
  local root = roots_of(bufnr, roots)[1]
  return root and M.failed[root]
end

--- The workspace root of the buffer last entered that a daemon serves (BufEnter, set up by
--- init.lua): the workspace in use, which a buffer of none (a chat plugin's) falls back to
--- for the gateway rather than starting a daemon on a folder that is no project.
---@type string|nil
M.last_root = nil

function M.entered(bufnr)
  local best
  for _, c in ipairs(M.serving_clients(bufnr)) do
    if not best or c.id > best.id then
      best = c
    end
  end
  if best and best.root_dir then
    M.last_root = best.root_dir
  end
end

--- The client whose figures a buffer shows (default: the current one): the newest of those
--- serving it (M.serving_clients) that the daemon has answered; nil when none.
function M.current_client_id(bufnr)
  local best
  for _, c in ipairs(M.serving_clients(bufnr)) do
    if M.by_client[c.id] and (not best or c.id > best) then
      best = c.id
    end
  end
  return best
end

--- e.g. "ctx 42.1k/128k 33%", or for a live chat "ctx chat 12k/128k 9% (4.1k cached, ±2%)";
--- "ctx …" while starting; "ctx !" when it failed (an error before any figure, or the
--- workspace's daemon could not start or ended unasked); "" when no daemon serves this buffer.
---@param opts? {highlight?: boolean, bufnr?: integer}
function M.text(opts)
  opts = opts or {}
  local id = M.current_client_id(opts.bufnr)
  local state = id and M.by_client[id]
  if not state then
    -- a daemon started again after a failure is not answering yet: not `ctx !` meanwhile
    local failed = M.failure(opts.bufnr) and #M.serving_clients(opts.bufnr) == 0
    return failed and "ctx !" or ""
  end
  if state.error and not state.segment then
    return "ctx !"
  end
  local f = M.figures(state)
  if not f then
    return "ctx …"
  end
  local text = ("ctx %s%s/%s"):format(f.conversation and "chat " or "", M.human(f.used), M.human(f.limit))
  if f.percent then
    text = text .. (" %d%%"):format(M.shown_percent(f.percent))
  end
  text = text .. M.extras(f)
  if opts.highlight then
    -- Statusline code: the percent sign of the figure must be doubled.
    return ("%%#%s#%s%%*"):format(M.highlights[M.figure_level(f)], (text:gsub("%%", "%%%%")))
  end
  return text
end

return M
