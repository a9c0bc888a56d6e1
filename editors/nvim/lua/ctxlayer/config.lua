--- ctxlayer.config: the plugin's options, their defaults and their validation.
---
--- Owns the one settings table the other modules read. It never starts anything and never
--- talks to the daemon. Invalid options are reported once, naming the field, and replaced by
--- their defaults (the plugin keeps working), the way the daemon treats bad settings.

local M = {}

---@class ctxlayer.Opts
---@field cmd? string[] daemon command; default: the workspace venv's `ctxlayer serve`, else PATH
---@field model? string model name sent to the daemon (e.g. "gpt-4o"); default: the daemon's
---@field budget? integer tokens the assembled prompt may use; default: window - reserve
---@field context_window? integer override of the model's context window
---@field reserve_output? integer tokens kept free for the answer
---@field mode? string session mode, one of the daemon's (its announcement lists them); default: the daemon's
---@field config? table overrides of the workspace's ctxlayer.toml
---@field summarize? fun(messages: table[], instructions: string, max_tokens: integer): string
---@field root_markers? string[] files that mark a workspace root, tried in order
---@field autostart? boolean start the daemon when a file in a workspace is opened
---@field session? boolean open a session for the workspace
---@field open? fun(path: string) opens the inspector page; default: vim.ui.open
---@field timeout_ms? integer timeout of synchronous requests
---@field gateway? boolean|table run the daemon's HTTP gateway (a table: its settings, e.g. openai_base_url)
---@field notify_compaction? boolean one-line notice when a live chat was compacted

M.defaults = {
  cmd = nil,
  model = nil,
  budget = nil,
  context_window = nil,
  reserve_output = nil,
  mode = nil,
  config = nil,
  summarize = nil,
  root_markers = { "ctxlayer.toml", ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" },
  autostart = true,
  session = true,
  open = nil,
  timeout_ms = 10000,
  -- On by default: the ready-made chat setups need it, it listens on loopback only, on a port
  -- the system picks, and forwards nothing until a chat plugin is pointed at it.
  gateway = true,
  notify_compaction = true,
}

--- One check per field: returns nil when the value is acceptable, else what was expected.
local function positive_int(v)
  if type(v) ~= "number" or v ~= math.floor(v) or v <= 0 then
    return "a positive integer"
  end
end

local function non_negative_int(v)
  if type(v) ~= "number" or v ~= math.floor(v) or v < 0 then
    return "a non-negative integer"
  end
end

local function kind(t)
  return function(v)
    if type(v) ~= t then
      return "a " .. t
    end
  end
end

local function string_list(v)
  if type(v) ~= "table" or #v == 0 then
    return "a non-empty list of strings"
  end
  for _, s in ipairs(v) do
    if type(s) ~= "string" or s == "" then
      return "a non-empty list of strings"
    end
  end
end

local checks = {
  cmd = string_list,
  model = function(v)
    if type(v) ~= "string" or v == "" then
      return "a model name (non-empty string)"
    end
  end,
  budget = positive_int,
  context_window = positive_int,
  reserve_output = non_negative_int,
  -- The daemon owns the mode table; the name is checked against its announcement once it runs.
  mode = function(v)
    if type(v) ~= "string" or not v:match("^%a[%w_-]*$") then
      return "a mode name (e.g. \"deep\"; :Ctxlayer mode lists the daemon's)"
    end
  end,
  config = kind("table"),
  summarize = kind("function"),
  root_markers = string_list,
  autostart = kind("boolean"),
  session = kind("boolean"),
  open = kind("function"),
  timeout_ms = positive_int,
  gateway = function(v)
    if type(v) ~= "boolean" and type(v) ~= "table" then
      return "true, false or a table of gateway settings"
    end
  end,
  notify_compaction = kind("boolean"),
}

--- Validate user options against the defaults.
---@param opts table|nil
---@return table config the merged options (bad fields replaced by defaults)
---@return string[] problems one line per bad field, naming it
function M.resolve(opts)
  local problems = {}
  if opts ~= nil and type(opts) ~= "table" then
    return vim.deepcopy(M.defaults), { ("setup(opts): opts: expected a table, got %s"):format(type(opts)) }
  end
  local config = vim.deepcopy(M.defaults)
  for key, value in pairs(opts or {}) do
    local check = checks[key]
    if not check then
      table.insert(problems, ("opts.%s: unknown option"):format(tostring(key)))
    else
      local expected = check(value)
      if expected then
        table.insert(problems, ("opts.%s: expected %s, got %s"):format(key, expected, vim.inspect(value)))
      else
        config[key] = value
      end
    end
  end
  table.sort(problems)
  return config, problems
end

--- The current options (defaults until setup() runs) and the problems found in them.
M.current = vim.deepcopy(M.defaults)
M.problems = {}

function M.set(opts)
  M.current, M.problems = M.resolve(opts)
  return M.current, M.problems
end

return M
