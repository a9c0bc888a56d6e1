--- ctxlayer: the public Lua API of the Neovim plugin.
---
--- Owns `setup(opts)` (checks the Neovim version, validates options, installs the autostart
--- autocmds) and the functions other plugins call: `statusline()`, `statusline_hl()`, `lualine()`, `budget()`,
--- `request()`, `count()`, `trim()`, `assemble()`, `gateway()`, `client()`, `start()`, `stop()`,
--- `restart()`. The ready-made chat plugin setups are `require("ctxlayer.setups")`. Submodules are required lazily so `require("ctxlayer")` stays cheap.
--- The context logic itself lives in the daemon; nothing here counts or trims.

local M = {}

M.MIN_NVIM = "0.10"

local function lazy(name)
  return setmetatable({}, {
    __index = function(_, key)
      return require("ctxlayer." .. name)[key]
    end,
  })
end

local client = lazy("client")
local status = lazy("status")

local augroup

--- Configure the plugin and start the daemon for the current workspace.
---@param opts? ctxlayer.Opts
---@return boolean ok false when Neovim is too old
function M.setup(opts)
  if vim.fn.has("nvim-" .. M.MIN_NVIM) ~= 1 then
    vim.notify(("ctxlayer needs Neovim >= %s (this is %s)"):format(M.MIN_NVIM, tostring(vim.version())), vim.log.levels.ERROR)
    return false
  end
  local config = require("ctxlayer.config")
  local _, problems = config.set(opts)
  if #problems > 0 then
    vim.notify("ctxlayer: invalid options (defaults used):\n" .. table.concat(problems, "\n"), vim.log.levels.ERROR)
  end
  status.define_highlights()
  -- daemons already running take the new model, budget and mode (their sessions too)
  require("ctxlayer.client").apply_options()
  augroup = vim.api.nvim_create_augroup("ctxlayer", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", { group = augroup, callback = status.define_highlights })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = augroup,
    callback = function(args)
      status.entered(args.buf)
    end,
  })
  if config.current.autostart then
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = augroup,
      callback = function(args)
        client.start(args.buf)
      end,
    })
    M.start()
  end
  return true
end

--- Start the daemon for a buffer's workspace (default: the current buffer, else the cwd).
---@return integer|nil client_id
function M.start(bufnr)
  return client.start(bufnr or vim.api.nvim_get_current_buf())
end

function M.stop()
  return client.stop()
end

function M.restart()
  return client.restart()
end

--- The ctxlayer LSP client serving a buffer (default: current), or nil.
---@return vim.lsp.Client|nil
function M.client(bufnr)
  return client.get(bufnr)
end

--- Status line text such as `ctx 42.1k/128k 33%` ("" when no daemon serves the buffer).
---@param opts? {highlight?: boolean, bufnr?: integer}
function M.statusline(opts)
  return status.text(opts)
end

--- The status line text wrapped in its level's highlight group, for 'statusline':
--- `%{%v:lua.require'ctxlayer'.statusline_hl()%}` (a `{...}` argument would end `%{`).
function M.statusline_hl()
  return status.text({ highlight = true })
end

--- A lualine component: `lualine_x = { require("ctxlayer").lualine() }`.
function M.lualine()
  return {
    function()
      -- lualine evaluates components as statusline code: double the percent sign.
      return (status.text():gsub("%%", "%%%%"))
    end,
    cond = function()
      return status.current_client_id() ~= nil or status.failure() ~= nil -- `ctx !` shows too
    end,
    color = function()
      local f = status.figures(status.get(status.current_client_id()))
      return f and status.highlights[status.figure_level(f)] or nil
    end,
  }
end

--- The current figures: {used, limit, percent, source, state}, or nil before the first answer.
function M.budget(bufnr)
  local id = status.current_client_id(bufnr)
  local state = id and status.get(id)
  local f = status.figures(state)
  if f then
    f.state = state
  end
  return f
end

--- Send any ctx/* request. With `on_result` it is asynchronous; without, it blocks up to
--- timeout_ms and returns result, err.
function M.request(method, params, on_result)
  local c = client.get()
  if not c then
    local err = "ctxlayer is not running for this buffer (:Ctxlayer start)"
    if on_result then
      vim.notify(err, vim.log.levels.ERROR)
      return nil
    end
    return nil, err
  end
  if on_result then
    return client.request(c, method, params, on_result)
  end
  return client.request_sync(c, method, params)
end

--- The HTTP gateway's base URLs `{ openai = "http://127.0.0.1:N/v1", anthropic = "http://127.0.0.1:N" }`
--- (point a chat plugin at them), or nil and a message saying how to turn the gateway on.
--- Starts the daemon for the cwd's workspace when none runs, waiting up to timeout_ms.
---@param opts? {timeout_ms?: integer, start?: boolean}
function M.gateway(opts)
  return require("ctxlayer.gateway").urls(opts)
end

--- Count tokens of texts (blocking): returns the ctx/count result {tokens, total}, err.
function M.count(texts, model)
  return M.request("ctx/count", { texts = texts, model = model or require("ctxlayer.config").current.model })
end

--- Whether the daemon's error refuses the request's `field`.
local function names_field(err, field)
  local data = type(err) == "table" and err.data or nil
  return type(data) == "table" and data.field == field
end

--- Trim a conversation to the budget (blocking). The result also feeds the status line
--- (without a session, it shows the last trimmed chat's figure).
---@param messages table[] PROTOCOL Message tables
---@param opts? {budget?: integer, model?: string, docs?: string[], strategy?: string}
function M.trim(messages, opts)
  opts = opts or {}
  local config = require("ctxlayer.config").current
  local c = client.get()
  local state = c and status.get(c.id)
  local configured = status.usable_budget(state, config.budget)
  local params = {
    messages = messages,
    model = opts.model or config.model,
    budget = opts.budget or configured,
    -- an output reserve that leaves the model no room: the daemon said at its start that it
    -- uses its default instead, and refused every trim that sent it again
    reserveOutput = not (state and state.reserve_refused) and config.reserve_output or nil,
    docs = opts.docs,
    strategy = opts.strategy,
  }
  local result, err, refusal = M.request("ctx/trim", params)
  if not result and params.reserveOutput and names_field(refusal, "reserveOutput") then
    if c then
      status.update(c.id, { reserve_refused = true })
    end
    params.reserveOutput = nil
    result, err = M.request("ctx/trim", params)
  end
  if result then
    c = client.get()
    status.update(c.id, {
      last_trim = {
        tokens = result.tokens,
        budget = result.budget,
        dropped = result.dropped,
        truncated = result.truncated,
        percent = result.percent,
        messages = messages,
      },
    })
  end
  return result, err
end

--- The assembled prompt of this workspace's session (blocking), or the system prompt when
--- the plugin opened no session (opts.session = false): {messages, tokens, ...}, err.
function M.assemble(opts)
  return require("ctxlayer.commands").assembled(opts)
end

return M
