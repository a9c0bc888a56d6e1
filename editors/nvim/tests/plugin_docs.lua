--- The option names each chat plugin documents, for checking the ready-made setups against.
---
--- Read from each plugin's own documentation at these versions (never their code copied):
---   CodeCompanion.nvim v19.22.0: doc/guides/openai-compatible-providers.md (adapters.http.<name>
---     = function returning adapters.extend("openai_compatible", {formatted_name, env = {url,
---     chat_url, models_endpoint, api_key}, schema = {model = {default}}})),
---     doc/configuration/adapters-http.md (env values: a variable name, "cmd:", a function, or a
---     schema reference; `${key}` interpolated into the url; extend("anthropic", ...)),
---     doc/configuration/context-management.md (interactions.chat.opts.context_management.enabled),
---     lua/codecompanion/adapters/http/anthropic.lua (url, opts.compaction).
---   avante.nvim release-v0.2 (a933431): README.md "Default configuration" and
---     lua/avante/config.lua's providers (provider, providers.<name> = {__inherited_from,
---     endpoint, model, api_key_name}); the claude provider's endpoint is the host without /v1.
---   gp.nvim v3.9.0: README / lua/gp/config.lua (providers.<name> = {disable, endpoint, secret};
---     the openai endpoint ends in /chat/completions, the anthropic one in /v1/messages).
---   CopilotChat.nvim v4.7.4: README.md "Providers" (model, providers.<name> = {disabled,
---     get_info, get_headers, get_url, prepare_input, prepare_output, get_models, resolve_model}).
---
--- A spec maps each documented key to the type of its value, or to a nested spec; `["*"]`
--- stands for any name (an adapter's or provider's own name).

local D = {}

D.codecompanion = {
  adapters = { http = { ["*"] = "function" } },
  interactions = {
    chat = {
      adapter = "string",
      opts = { context_management = { enabled = "boolean" } },
    },
  },
}

--- What the adapter function passes to require("codecompanion.adapters").extend(name, X).
D.codecompanion_adapter = {
  formatted_name = "string",
  url = "string",
  env = { url = "function", chat_url = "string", models_endpoint = "string", api_key = "string", ["*"] = "function" },
  schema = { model = { default = "string" } },
  opts = { compaction = "boolean" },
}

D.avante = {
  provider = "string",
  providers = { ["*"] = { __inherited_from = "string", endpoint = "string", model = "string", api_key_name = "string" } },
}

D.gp = {
  providers = {
    openai = { endpoint = "string", secret = "string" },
    anthropic = { endpoint = "string", secret = "string" },
  },
}

D.copilotchat = {
  model = "string",
  providers = {
    ["*"] = {
      disabled = "boolean",
      get_info = "function",
      get_headers = "function",
      get_url = "function",
      prepare_input = "function",
      prepare_output = "function",
      get_models = "function",
      resolve_model = "function",
    },
  },
}

--- Every key of `value` (recursively) that its spec does not document, or whose value has
--- another type: a list of "path: problem" strings (empty when all is documented).
function D.check(value, spec, path, problems)
  path = path or "setup"
  problems = problems or {}
  if type(value) ~= "table" then
    table.insert(problems, ("%s: expected a table, got %s"):format(path, type(value)))
    return problems
  end
  for key, v in pairs(value) do
    local want = spec[key] or spec["*"]
    local where = ("%s.%s"):format(path, tostring(key))
    if want == nil then
      table.insert(problems, where .. ": not a documented option")
    elseif type(want) == "table" then
      D.check(v, want, where, problems)
    elseif type(v) ~= want then
      table.insert(problems, ("%s: documented as a %s, got a %s"):format(where, want, type(v)))
    end
  end
  return problems
end

return D
