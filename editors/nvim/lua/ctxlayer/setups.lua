--- ctxlayer.setups: ready-made setups that send a Neovim chat plugin's requests through the
--- daemon's HTTP gateway, keeping the user's model and API key.
---
--- Each function returns the table that plugin's own setup() takes (merged over `base`, the
--- rest of the user's table for it): CodeCompanion.nvim, avante.nvim, gp.nvim, CopilotChat.nvim.
--- Plain data, apart from small functions where a plugin takes one (CodeCompanion's env
--- values, CopilotChat's get_url), which look the URL up at request time and so follow a
--- daemon restart. Option names follow each plugin's documentation (the versions are named in
--- doc/ctxlayer.txt and in the tests). Nothing here talks to a provider.

local M = {}

local FORMATS = { openai = true, anthropic = true }

local function string_or_function(v)
  if type(v) ~= "string" and type(v) ~= "function" then
    return "a string or a function"
  end
end

local function name(v)
  if type(v) ~= "string" or not v:match("^[%w_.-]+$") then
    return "a name of letters, digits, _ . or -"
  end
end

local function string_list(v)
  if type(v) ~= "table" or #v == 0 then
    return false
  end
  for _, s in ipairs(v) do
    if type(s) ~= "string" then
      return false
    end
  end
  return true
end

local CHECKS = {
  format = function(v)
    if not FORMATS[v] then
      return '"openai" or "anthropic"'
    end
  end,
  model = function(v)
    if type(v) ~= "string" or v == "" then
      return "a model name"
    end
  end,
  name = name,
  -- What each plugin takes for its key: a name or a function, and for avante and gp also a
  -- command as a list of strings.
  key = string_or_function,
  key_or_command = function(v)
    if type(v) ~= "string" and not string_list(v) then
      return "a string or a command (list of strings)"
    end
  end,
}

--- Validate opts against the fields `who` takes ({field = check name}); a bad field is an
--- error naming it.
local function options(who, opts, fields)
  if opts == nil then
    return {}
  end
  if type(opts) ~= "table" then
    error(("ctxlayer.setups.%s(opts): expected a table, got %s"):format(who, type(opts)), 3)
  end
  for key, value in pairs(opts) do
    local check = fields[key]
    if not check then
      local known = vim.tbl_keys(fields)
      table.sort(known)
      error(("ctxlayer.setups.%s: opts.%s: unknown option (known: %s)"):format(who, tostring(key), table.concat(known, ", ")), 3)
    end
    local expected = CHECKS[check](value)
    if expected then
      error(("ctxlayer.setups.%s: opts.%s: expected %s, got %s"):format(who, key, expected, vim.inspect(value)), 3)
    end
  end
  return opts
end

local function merge(base, ours)
  if base ~= nil and type(base) ~= "table" then
    error(("ctxlayer.setups: base: expected the plugin's setup table, got %s"):format(type(base)), 3)
  end
  return vim.tbl_deep_extend("force", base or {}, ours)
end

--- A function giving the gateway URL at request time (raises the gateway's message when off).
local function later(kind, suffix)
  return function()
    local urls, err = require("ctxlayer.gateway").urls()
    if not urls then
      error(err, 0)
    end
    return urls[kind] .. (suffix or "")
  end
end

--- The gateway URL now, for options that take a string; nil (after saying so) when it is off.
local function now(kind, who)
  local urls, err = require("ctxlayer.gateway").urls()
  if not urls then
    vim.notify(err .. ("\nctxlayer.setups.%s: left pointing at the provider itself"):format(who), vim.log.levels.WARN)
    return nil
  end
  return urls[kind]
end

--- CodeCompanion.nvim: an adapter extended from `openai_compatible` (or `anthropic`) named
--- `opts.name` ("ctxlayer"), made the chat's adapter, with CodeCompanion's own context
--- management off so the chat is not compacted twice (and the anthropic adapter's server-side
--- compaction off too).
---@param opts? {format?: "openai"|"anthropic", model?: string, api_key?: string|function, name?: string}
---@param base? table the rest of your require("codecompanion").setup() table
function M.codecompanion(opts, base)
  opts = options("codecompanion", opts, { format = "format", model = "model", api_key = "key", name = "name" })
  local adapter_name = opts.name or "ctxlayer"
  local extends, adapter
  if (opts.format or "openai") == "openai" then
    extends = "openai_compatible"
    adapter = {
      formatted_name = "ctxlayer",
      env = {
        url = later("openai"),
        chat_url = "/chat/completions",
        models_endpoint = "/models",
        api_key = opts.api_key or "OPENAI_API_KEY",
      },
    }
  else
    extends = "anthropic"
    adapter = {
      formatted_name = "ctxlayer (Anthropic)",
      url = "${ctxlayer_url}/v1/messages",
      env = { ctxlayer_url = later("anthropic"), api_key = opts.api_key or "ANTHROPIC_API_KEY" },
      opts = { compaction = false },
    }
  end
  if opts.model then
    adapter.schema = { model = { default = opts.model } }
  end
  return merge(base, {
    adapters = {
      http = {
        [adapter_name] = function()
          return require("codecompanion.adapters").extend(extends, adapter)
        end,
      },
    },
    interactions = {
      chat = { adapter = adapter_name, opts = { context_management = { enabled = false } } },
    },
  })
end

--- avante.nvim: a provider `opts.name` ("ctxlayer") inheriting from `openai` (or `claude`),
--- its `endpoint` the gateway, made the provider. `api_key` is avante's `api_key_name`.
---@param opts? {format?: "openai"|"anthropic", model?: string, api_key?: string|string[], name?: string}
---@param base? table the rest of your require("avante").setup() table
function M.avante(opts, base)
  opts = options("avante", opts, { format = "format", model = "model", api_key = "key_or_command", name = "name" })
  local openai = (opts.format or "openai") == "openai"
  local endpoint = now(openai and "openai" or "anthropic", "avante")
  if not endpoint then
    return merge(base, {})
  end
  local provider_name = opts.name or "ctxlayer"
  local provider = {
    __inherited_from = openai and "openai" or "claude",
    endpoint = endpoint,
    model = opts.model,
    api_key_name = opts.api_key,
  }
  if openai then
    -- Chat Completions: every request carries the whole chat, which ctxlayer fits (avante
    -- would switch some models to /responses, which the gateway serves too).
    provider.use_response_api = false
  end
  return merge(base, { provider = provider_name, providers = { [provider_name] = provider } })
end

--- gp.nvim: the `openai` (or `anthropic`) provider's `endpoint` set to the gateway; its secret
--- and your agents (their models) stay as they are. `api_key` is gp's provider `secret`.
---@param opts? {format?: "openai"|"anthropic", api_key?: string|table}
---@param base? table the rest of your require("gp").setup() table
function M.gp(opts, base)
  opts = options("gp", opts, { format = "format", api_key = "key_or_command" })
  local openai = (opts.format or "openai") == "openai"
  local url = now(openai and "openai" or "anthropic", "gp")
  if not url then
    return merge(base, {})
  end
  local provider = { endpoint = url .. (openai and "/chat/completions" or "/v1/messages"), secret = opts.api_key }
  return merge(base, { providers = { [openai and "openai" or "anthropic"] = provider } })
end

--- CopilotChat.nvim: a provider `opts.name` ("ctxlayer") whose `get_url` is the gateway, with
--- CopilotChat's own OpenAI-shaped request and answer handling, offering `opts.model` (needed:
--- the gateway forwards to your provider, not to Copilot) as `<model>:<name>`, the chat's
--- model. `api_key`: the environment variable holding the key (default OPENAI_API_KEY) or a
--- function returning it.
---
--- Why the qualified id: CopilotChat keys models by id over its providers taken in name
--- order, and renames a model whose id an earlier provider already offers to `<id>:<provider>`.
--- Copilot offers gpt-4.1 and "copilot" sorts before "ctxlayer", so a chat model of plain
--- "gpt-4.1" was Copilot's and bypassed the gateway. Under the qualified id the chat model is
--- ours whatever the other providers offer.
---@param opts {model: string, api_key?: string|function, name?: string}
---@param base? table the rest of your require("CopilotChat").setup() table
function M.copilotchat(opts, base)
  opts = options("copilotchat", opts, { model = "model", api_key = "key", name = "name" })
  if not opts.model then
    error('ctxlayer.setups.copilotchat: opts.model: expected a model name, e.g. "gpt-4.1"', 2)
  end
  local key = opts.api_key or "OPENAI_API_KEY"
  local provider_name = opts.name or "ctxlayer"
  local model_id = opts.model .. ":" .. provider_name
  local function providers()
    return require("CopilotChat.config.providers").copilot
  end
  return merge(base, {
    model = model_id,
    providers = {
      [provider_name] = {
        get_url = later("openai", "/chat/completions"),
        get_headers = function()
          local secret = type(key) == "function" and key() or vim.env[key]
          if not secret or secret == "" then
            error(("ctxlayer.setups.copilotchat: $%s is not set (opts.api_key)"):format(tostring(key)), 0)
          end
          return { Authorization = "Bearer " .. secret, ["Content-Type"] = "application/json" }
        end,
        get_models = function()
          return { { id = model_id, name = opts.model .. " (ctxlayer)" } }
        end,
        prepare_input = function(inputs, input_opts)
          -- CopilotChat strips `:<provider>` before this, but reads the name as a Lua pattern
          -- (a name with - is left on): the request names the model the provider serves.
          local model = vim.tbl_extend("force", input_opts.model or {}, { id = opts.model })
          local ours = vim.tbl_extend("force", input_opts, { model = model })
          return providers().prepare_input(inputs, ours)
        end,
        prepare_output = function(...)
          return providers().prepare_output(...)
        end,
      },
    },
  })
end

return M
