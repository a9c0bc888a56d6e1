--- ctxlayer.client: starts the daemon as a Neovim LSP client and keeps the status fed.
---
--- Owns the daemon command lookup, the workspace root, `vim.lsp.start` with the
--- initialization options of PROTOCOL.md (the gateway switch included), reading the daemon's
--- announcement (modes, default budget and mode, gateway URLs; a daemon of another protocol
--- is refused once, saying to update it), and the request helpers. The
--- notification handlers live in handlers.lua. It does not format anything (that is
--- status.lua) and never blocks the editor except in the explicit `request_sync`.

local config = require("ctxlayer.config")
local status = require("ctxlayer.status")

local M = {}

M.NAME = "ctxlayer"

local uv = vim.uv or vim.loop

--- Workspace programs the user has not trusted: their paths, for the not-found message.
M.untrusted = {}

--- Whether the user trusts a program the workspace holds. A repository may ship its own
--- `.venv/bin/ctxlayer`: opening any file of a project cloned from anyone ran it. Neovim asks
--- once, as for an exrc file (vim.secure: allow, deny, view; `:trust` later), and remembers
--- the answer by the file's content.
local function trusted(path)
  local ok, contents = pcall(vim.secure.read, path)
  return ok and contents ~= nil
end

--- opts.cmd when its program cannot be run (the not-found message names it), else nil.
M.unrunnable = nil

--- The daemon command: opts.cmd, else the workspace venv's ctxlayer (once trusted), else the
--- active venv's, else ctxlayer on PATH. nil when none is found, opts.cmd's program included:
--- Neovim would only say, once per buffer, that spawning it failed.
---@param root? string
---@return string[]|nil
function M.resolve_cmd(root)
  local cfg = config.current
  M.unrunnable = nil
  if cfg.cmd then
    if vim.fn.executable(cfg.cmd[1]) == 1 then
      return cfg.cmd
    end
    M.unrunnable = cfg.cmd[1]
    return nil
  end
  local candidates = {}
  if root then
    table.insert(candidates, { vim.fs.joinpath(root, ".venv", "bin", "ctxlayer"), true })
    table.insert(candidates, { vim.fs.joinpath(root, "venv", "bin", "ctxlayer"), true })
  end
  if vim.env.VIRTUAL_ENV then  -- the user activated it
    table.insert(candidates, { vim.fs.joinpath(vim.env.VIRTUAL_ENV, "bin", "ctxlayer"), false })
  end
  for _, c in ipairs(candidates) do
    local path, workspace = c[1], c[2]
    if vim.fn.executable(path) == 1 then
      if not workspace or trusted(path) then
        M.untrusted[path] = nil
        return { path, "serve" }
      end
      M.untrusted[path] = true
    end
  end
  if vim.fn.executable("ctxlayer") == 1 then
    return { "ctxlayer", "serve" }
  end
  return nil
end

M.NOT_FOUND = "ctxlayer: daemon not found. Install it from a checkout of ctxlayer (`pipx install "
  .. "/path/to/ctxlayer`, or `make setup` in the workspace) or set `cmd` in require('ctxlayer').setup({ cmd = { '/path/to/ctxlayer', 'serve' } })"

--- The not-found message, naming opts.cmd's program when it cannot be run, and the workspace
--- programs left unrun because not trusted.
function M.not_found()
  if M.unrunnable then
    return ("ctxlayer: daemon not found: opts.cmd[1] %q is not an executable program. "):format(
      M.unrunnable) .. "Install ctxlayer from a checkout (`pipx install /path/to/ctxlayer`) and set `cmd` to "
      .. "its path: "
      .. "require('ctxlayer').setup({ cmd = { '/path/to/ctxlayer', 'serve' } })"
  end
  local paths = vim.tbl_keys(M.untrusted)
  table.sort(paths)
  if #paths == 0 then
    return M.NOT_FOUND
  end
  return M.NOT_FOUND .. ". Not run, as the workspace ships it and you have not trusted it: "
    .. table.concat(paths, ", ") .. " (`:edit` it and `:trust` it to run it from then on)"
end

--- The workspace root of a buffer (a file under a root marker), or nil.
function M.root(bufnr)
  bufnr = bufnr or 0
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  return vim.fs.root(bufnr, config.current.root_markers)
end

--- The workspace config overrides sent to the daemon: the user's `config`, plus the gateway
--- section when `gateway` is on (its table form gives the gateway's own settings).
function M.config_overrides()
  local cfg = config.current
  local overrides = vim.deepcopy(cfg.config or {})
  if cfg.gateway then
    local gateway = type(cfg.gateway) == "table" and vim.deepcopy(cfg.gateway) or {}
    gateway.enabled = true
    overrides.gateway = vim.tbl_extend("force", overrides.gateway or {}, gateway)
  end
  return next(overrides) and overrides or nil
end

--- initializationOptions of PROTOCOL.md (camelCase; unset fields left out). The mode is not
--- among them: it can only be checked against the modes the daemon announces in its answer,
--- and one bad field makes the daemon drop every option (the gateway switch with it); the
--- session gets the mode instead.
function M.init_options()
  local cfg = config.current
  local opts = {
    model = cfg.model,
    contextWindow = cfg.context_window,
    reserveOutput = cfg.reserve_output,
    config = M.config_overrides(),
  }
  -- none set: an empty Lua table goes out as `[]`, which the daemon warned of at every start
  return next(opts) and opts or vim.empty_dict()
end

function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = caps.experimental or {}
  caps.experimental.ctxlayer = { summarize = config.current.summarize ~= nil }
  return caps
end

--- What the daemon announced in its initialize result (`capabilities.experimental.ctxlayer`):
--- methods, model, defaultBudget, defaultMode, modes, gateway. {} when it announced nothing
--- (such a daemon is refused at initialize: M.problem).
function M.announcement(client)
  local exp = client and client.server_capabilities and client.server_capabilities.experimental
  local info = type(exp) == "table" and exp.ctxlayer
  return type(info) == "table" and info or {}
end

--- The protocol this plugin speaks, and every request of it (tests/editors checks both
--- against server/ctxlayer/protocol.py).
M.PROTOCOL_VERSION = "0.1"
M.REQUESTS = {
  "ctx/segment", "ctx/systemPrompt", "ctx/count", "ctx/trim",
  "ctx/session/open", "ctx/session/append", "ctx/session/addItem", "ctx/session/addRule",
  "ctx/session/removeRule", "ctx/session/setMode", "ctx/session/configure", "ctx/assemble",
  "ctx/session/compact", "ctx/session/reportUsage", "ctx/session/budget", "ctx/session/audit",
  "ctx/session/list", "ctx/session/close", "ctx/inspect", "ctx/prepare", "ctx/conversations",
  "ctx/why", "ctx/restore",
}
--- Requests the plugin does without when a daemon of this protocol predates them: such a
--- daemon is not refused, and what the request would have done is said instead.
M.OPTIONAL = { ["ctx/session/configure"] = true }
--- The announcement's fields the plugin reads instead of guessing.
local NEEDED_FIELDS = { "protocolVersion", "methods", "model", "defaultBudget", "defaultMode", "modes" }

--- nil when the daemon speaks this protocol in full, else what to tell the user (one line).
function M.problem(client)
  local info = M.announcement(client)
  local update = "update ctxlayer (`pip install -U ctxlayer` in the environment of opts.cmd)"
  if info.protocolVersion ~= M.PROTOCOL_VERSION then
    local theirs = type(info.protocolVersion) == "string" and ("protocol " .. info.protocolVersion)
      or "no protocol version"
    return ("ctxlayer: this daemon speaks %s; the plugin needs protocol %s: %s"):format(
      theirs, M.PROTOCOL_VERSION, update)
  end
  local missing = {}
  for _, field in ipairs(NEEDED_FIELDS) do
    if info[field] == nil or info[field] == vim.NIL then
      table.insert(missing, field)
    end
  end
  local methods = {}
  for _, m in ipairs(type(info.methods) == "table" and info.methods or {}) do
    methods[m] = true
  end
  for _, m in ipairs(M.REQUESTS) do
    if not methods[m] and not M.OPTIONAL[m] then
      table.insert(missing, m)
    end
  end
  if #missing > 0 then
    return ("ctxlayer: this daemon is older than protocol %s as the plugin knows it (it lacks %s): %s"):format(
      M.PROTOCOL_VERSION, table.concat(missing, ", "), update)
  end
end

--- Whether the daemon announced `method` (an optional one may be missing: M.OPTIONAL).
function M.supports(client, method)
  local methods = M.announcement(client).methods
  return type(methods) == "table" and vim.tbl_contains(methods, method)
end

--- The daemon's mode names, sorted.
function M.mode_names(client)
  local modes = M.announcement(client).modes
  local names = type(modes) == "table" and vim.tbl_keys(modes) or {}
  table.sort(names)
  return names
end

--- The mode to open the session with: the configured one when the daemon knows it, else nil,
--- which lets the daemon use its default.
function M.requested_mode(client)
  local mode = config.current.mode
  if mode and not vim.tbl_contains(M.mode_names(client), mode) then
    return nil
  end
  return mode
end

--- The ctxlayer client serving a buffer (default: the current one): the one whose figures it
--- shows, else the newest serving it (still starting); nil for a file no daemon serves.
---@return vim.lsp.Client|nil
function M.get(bufnr)
  local id = status.current_client_id(bufnr)
  if id then
    return vim.lsp.get_client_by_id(id)
  end
  local clients = status.serving_clients(bufnr)
  return clients[#clients]
end

--- Call a vim.lsp.Client method: `client:m(...)` on 0.11, `client.m(...)` on 0.10.
local has_011 = vim.fn.has("nvim-0.11") == 1
function M.call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- Params as a JSON object: an empty Lua table would be sent as `[]`.
local function object(params)
  if params == nil or next(params) == nil then
    return vim.empty_dict()
  end
  return params
end
M.object = object

--- Send a request; `on_result(result)` runs on success, errors are shown once.
function M.request(client, method, params, on_result, on_error)
  return M.call(client, "request", method, object(params), function(err, result)
    if err then
      if on_error then
        on_error(err)
      else
        vim.notify(("ctxlayer: %s failed: %s"):format(method, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      return
    end
    if on_result then
      on_result(result)
    end
  end)
end

--- A blocking request with the configured timeout: result, err (a message string), and the
--- daemon's error (code, message, data) when it answered with one.
function M.request_sync(client, method, params, timeout_ms)
  local resp, err = M.call(client, "request_sync", method, object(params), timeout_ms or config.current.timeout_ms)
  if not resp then
    return nil, ("%s: %s"):format(method, err or "no response")
  end
  if resp.err then
    -- the error itself third: its data names the refused field
    return nil, ("%s: %s"):format(method, resp.err.message or vim.inspect(resp.err)), resp.err
  end
  return resp.result, nil
end

--- Fetch what the status line needs: the segment first (it waits for the first scan), then
--- the budget limit and the session budget, which count the segment.
function M.refresh(client, done)
  local id = client.id
  local function fail(err)
    status.update(id, { error = err.message or vim.inspect(err) })
    if done then
      done(status.get(id))
    end
  end
  M.request(client, "ctx/segment", {}, function(segment)
    status.update(id, { segment = segment })
    local state = status.get(id)
    if not state then
      return
    end
    if state.session_id then
      -- ctx/session/budget measures the session against the workspace as it is now (an
      -- assembly would be a request, and make this session the live chat)
      M.request(client, "ctx/session/budget", { sessionId = state.session_id }, function(budget)
        status.update(id, { budget = budget, limit = budget.limit })
        M.read_mode(client, state.session_id, function()
          if done then
            done(status.get(id))
          end
        end)
      end, fail)
    elseif done then
      done(state)
    end
  end, fail)
end

--- The session's mode as the daemon holds it (ctx/session/list): another editor on the same
--- folder shares the session and may have set it, and no Budget carries the mode. Then
--- `done()`, also when the list fails (the mode shown stays the last known).
function M.read_mode(client, session_id, done)
  M.request(client, "ctx/session/list", {}, function(result)
    M.take_mode(client, session_id, result)
    done()
  end, function()
    done()
  end)
end

--- The session's mode from a ctx/session/list result, into the client's state.
function M.take_mode(client, session_id, listed)
  for _, info in ipairs(listed and listed.sessions or {}) do
    if info.sessionId == session_id and type(info.mode) == "string" then
      status.update(client.id, { mode = info.mode })
    end
  end
end

--- The session of a workspace: one stable id per root, so rules and mode outlive a restart.
function M.session_id(root)
  return "nvim-" .. vim.fn.sha256(root or ""):sub(1, 16)
end

--- Open (or reopen) this workspace's session (unless opts.session is false), then refresh.
function M.open_session(client, done)
  local cfg = config.current
  if not cfg.session then
    return M.refresh(client, done)
  end
  M.request(client, "ctx/session/open", {
    sessionId = M.session_id(client.root_dir),
    model = cfg.model,
    mode = M.requested_mode(client),
    budget = cfg.budget,
  }, function(result)
    status.update(client.id, { session_id = result.sessionId, mode = result.mode,
      model = result.model, session_error = false })
    M.configure_session(client, result, done)
  end, function(err)
    if M.names_budget(err) then
      -- no session holds the refused budget: the figures are of the daemon's default for the
      -- model (the one it announced), and trim leaves the refused budget out
      local announced = M.announcement(client)
      status.update(client.id, { limit = announced.defaultBudget, budget_refused = true })
    end
    M.session_failed(client, "could not be opened", "ctx/session/open", err)
    M.refresh(client, done)
  end)
end

--- Whether the daemon's error refuses the request's `budget` (over the model's window).
function M.names_budget(err)
  local data = type(err) == "table" and err.data or nil
  return type(data) == "table" and data.field == "budget"
end

--- The workspace session failed to open or to take the options: the daemon's reason is said
--- once and kept as the state's `session_error` (the next answer clears `error`, not it), for
--- :Ctxlayer status and the commands that need the session to repeat.
function M.session_failed(client, what, method, err)
  local reason = ("%s: %s"):format(method, err.message or vim.inspect(err))
  status.update(client.id, { session_error = reason })
  vim.notify(("ctxlayer: the workspace session %s: %s"):format(what, reason), vim.log.levels.ERROR)
end

--- What the user configured (model, budget, mode) that the opened session holds otherwise, as
--- ctx/session/configure params; nil when it holds all of it. A model or mode left unset keeps
--- the session's own; a budget left unset is the model's default (the window minus the output
--- reserve, as |ctxlayer-options| says): `resetBudget`, unless the session is known to be at
--- it (the announced model's announced default budget).
function M.session_changes(client, opened)
  local cfg = config.current
  local wanted = { model = cfg.model, budget = cfg.budget, mode = M.requested_mode(client) }
  local changes = {}
  for field, value in pairs(wanted) do
    if value ~= nil and value ~= opened[field] then
      changes[field] = value
    end
  end
  if cfg.budget == nil then
    local announced = M.announcement(client)
    local model = changes.model or opened.model
    local at_default = model == opened.model and model == announced.model
      and opened.budget == announced.defaultBudget
    if not at_default then
      changes.resetBudget = true
    end
  end
  return next(changes) and changes or nil
end

--- setup() called again while daemons run (a re-sourced config, a plugin manager's reload):
--- each workspace session takes the new model, budget and mode as it would at a start
--- (reopened, then ctx/session/configure), and a figure without a session its new limit.
--- Before, the daemon kept the first budget while :Ctxlayer assemble sent the new one.
function M.apply_options()
  local cfg = config.current
  for _, c in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    if c.initialized and status.get(c.id) then
      local announced = M.announcement(c)
      status.update(c.id, {
        limit = cfg.budget or announced.defaultBudget,
        model = cfg.model or announced.model,
        budget_refused = false, -- a new budget: the daemon says again if it refuses it
        reserve_refused = false, -- and a new output reserve
      })
      M.open_session(c)
    end
  end
end

--- The workspace session keeps its id across restarts, and reopening it answers it unchanged:
--- options changed since are sent with ctx/session/configure. A daemon without that request
--- keeps the session's settings, and the user is told which, once.
function M.configure_session(client, opened, done)
  local changes = M.session_changes(client, opened)
  if not changes then
    return M.refresh(client, done)
  end
  if not M.supports(client, "ctx/session/configure") then
    local said = {}
    for _, field in ipairs({ "model", "budget", "mode" }) do
      if changes[field] ~= nil then
        table.insert(said, ("%s %s (opts.%s: %s)"):format(field, tostring(opened[field]), field,
          tostring(changes[field])))
      end
    end
    if changes.resetBudget then
      table.insert(said, ("budget %s (opts.budget: unset, the model's default)"):format(
        tostring(opened.budget)))
    end
    vim.notify(("ctxlayer: this daemon cannot change the workspace session's settings (no "
      .. "ctx/session/configure); it keeps %s: update ctxlayer (`pip install -U ctxlayer`)"):format(
      table.concat(said, ", ")), vim.log.levels.WARN)
    return M.refresh(client, done)
  end
  changes.sessionId = opened.sessionId
  M.request(client, "ctx/session/configure", changes, function(budget)
    status.update(client.id, { mode = changes.mode or opened.mode, model = budget.model,
      session_error = false })
    M.refresh(client, done)
  end, function(err)
    if M.names_budget(err) then
      status.update(client.id, { budget_refused = true }) -- the session keeps its own
    end
    M.session_failed(client, "kept its settings", "ctx/session/configure", err)
    M.refresh(client, done)
  end)
end

--- The handlers of the daemon's notifications and requests (handlers.lua).
M.handlers = require("ctxlayer.handlers")

--- Say once, naming the field, when the configured mode is not one the daemon announced.
local function check_mode(client)
  local mode = config.current.mode
  local names = M.mode_names(client)
  if mode and not vim.tbl_contains(names, mode) then
    vim.notify(("ctxlayer: opts.mode: %q is not one of the daemon's modes (%s); using its default %q"):format(
      mode, table.concat(names, ", "), tostring(M.announcement(client).defaultMode or "")
    ), vim.log.levels.ERROR)
  end
end

--- Workspace roots whose daemon was refused (another protocol): said once, not restarted
--- for every buffer; :Ctxlayer restart tries again.
local refused = {}

--- Clients the plugin stopped itself (:Ctxlayer stop or restart, a refused daemon), by id:
--- their exit is no failure.
local asked_to_stop = {}

--- Set when Neovim quits: the daemons end with it, which is no failure either.
M.leaving = false
vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("ctxlayer.client", { clear = true }),
  callback = function()
    M.leaving = true
  end,
})

local function on_init(client)
  local cfg = config.current
  local announced = M.announcement(client)
  local problem = M.problem(client)
  if problem then
    refused[client.root_dir or ""] = true
    asked_to_stop[client.id] = true -- the refusal is said: its exit is no second message
    vim.schedule(function()
      vim.notify(problem, vim.log.levels.ERROR)
      M.call(client, "stop")
    end)
    return
  end
  status.ensure(client.id, client.root_dir)
  check_mode(client)
  status.update(client.id, {
    -- The daemon's defaults, announced in initialize, stand in for what the user left unset.
    limit = cfg.budget or announced.defaultBudget,
    model = cfg.model or announced.model,
    mode = M.requested_mode(client) or announced.defaultMode,
    gateway = announced.gateway,
  })
  vim.schedule(function()
    M.open_session(client)
  end)
end

--- Whether the plugin or the user asked client `client_id` to stop: :Ctxlayer stop or restart,
--- a refused daemon, leaving Neovim, or anything that called Client:stop (:LspStop; Neovim
--- marks such a client `_is_stopping`, read when this Neovim has it).
local function asked(client_id)
  local c = vim.lsp.get_client_by_id(client_id)
  return M.stopping or M.leaving or asked_to_stop[client_id] or (c and c._is_stopping == true)
end

--- The daemon of `root` ended. Unasked, it is a failure whatever its exit code: `ctxlayer
--- serve` ends with code 0 on SIGTERM or SIGINT (a `kill PID`, a shutdown, a process
--- manager), and a `cmd` that is no daemon may exit 0 before answering; Neovim gives code 0 for
--- a SIGKILL too. It is said once and the status line shows `ctx !` for the workspace.
local function on_exit(code, signal, client_id, root)
  local unasked = not asked(client_id) -- now: the client is gone once this callback returns
  asked_to_stop[client_id] = nil
  local msg = ("ctxlayer: the daemon exited unasked (code %d, signal %d); see :checkhealth "
    .. "ctxlayer and :Ctxlayer log; :Ctxlayer restart starts it again"):format(code, signal)
  if unasked then
    -- recorded at once (a table write), so that a wait on this client (gateway.urls) finds it
    status.fail(root, msg)
  end
  vim.schedule(function()
    status.forget(client_id)
    if unasked then
      vim.notify(msg, vim.log.levels.WARN)
    end
  end)
end

--- Not-found messages already shown: each once, not once per buffer opened.
local warned_not_found = {}

--- Start (or reuse) the daemon for a buffer's workspace and attach the buffer.
---@param bufnr? integer
---@param opts? {root?: string, attach?: boolean}
---@return integer|nil client_id
function M.start(bufnr, opts)
  opts = opts or {}
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root = opts.root or M.root(bufnr)
  if not root or refused[root] then
    return nil
  end
  local cmd = M.resolve_cmd(root)
  if not cmd then
    local msg = M.not_found()
    status.fail(root, msg)
    if not warned_not_found[msg] then
      warned_not_found[msg] = true
      vim.notify(msg, vim.log.levels.ERROR)
    end
    return nil
  end
  -- Only file buffers are worth attaching (didSave); others just make sure the daemon runs.
  local attach = opts.attach ~= false and vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= ""
  return vim.lsp.start({
    name = M.NAME,
    cmd = cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = M.init_options(),
    capabilities = M.capabilities(),
    handlers = M.handlers,
    on_init = on_init,
    on_exit = function(code, signal, client_id)
      on_exit(code, signal, client_id, root)
    end,
  }, { bufnr = bufnr, attach = attach })
end

--- Stop every ctxlayer client and wait (up to timeout_ms) for them to exit.
function M.stop(timeout_ms)
  M.stopping = true
  local clients = vim.lsp.get_clients({ name = M.NAME })
  for _, c in ipairs(clients) do
    asked_to_stop[c.id] = true
    M.call(c, "stop")
  end
  vim.wait(timeout_ms or 5000, function()
    for _, c in ipairs(clients) do
      if not M.call(c, "is_stopped") then
        return false
      end
    end
    return true
  end, 20)
  M.stopping = false
  return #clients
end

--- Restart: stop, then start again for every buffer that was attached (and the cwd root).
function M.restart()
  refused = {}
  local buffers = {}
  for _, c in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    for buf in pairs(c.attached_buffers) do
      table.insert(buffers, buf)
    end
  end
  M.stop()
  local started
  for _, buf in ipairs(buffers) do
    if vim.api.nvim_buf_is_valid(buf) then
      started = M.start(buf) or started
    end
  end
  if not started then
    started = M.start(vim.api.nvim_get_current_buf())
  end
  return started
end

--- Where the logs are: Neovim's LSP log (daemon stderr lands there) and the daemon's state dir.
function M.log_paths()
  local state_dir = vim.env.CTXLAYER_STATE_DIR
    or vim.fs.joinpath(vim.env.XDG_STATE_HOME or vim.fs.joinpath(uv.os_homedir(), ".local", "state"), "ctxlayer")
  return { lsp = vim.lsp.get_log_path(), state_dir = state_dir }
end

return M
