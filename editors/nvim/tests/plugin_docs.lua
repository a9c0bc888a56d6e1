--- The option names each chat plugin documents, for checking the ready-made setups against.
---
--- Read from each plugin's own documentation (and, where the docs point at it, its default
--- configuration) at these versions; none of their code is copied:
---   CodeCompanion.nvim v19.22.0: doc/configuration/adapters-http.md (adapters.http.<name> =
---     function returning adapters.extend("openai_compatible" | "anthropic", {formatted_name,
---     env, schema = {model = {default}}}); env values: a variable name, "cmd:", a function called
---     with the adapter, a schema reference; `${key}` interpolated into url and headers),
---     doc/configuration/chat-buffer.md "Context Management"
---     (interactions.chat.opts.context_management.enabled), and the adapters those docs extend:
---     lua/codecompanion/adapters/http/openai_compatible.lua (env.url without /v1, env.chat_url,
---     env.models_endpoint, env.api_key) and anthropic.lua (url, opts.compaction).
---   avante.nvim release-v0.2: doc/avante.txt and lua/avante/config.lua's built-in providers
---     (provider; providers.<name> = {__inherited_from, endpoint, model, api_key_name,
---     use_response_api}), the wiki's "Custom providers"; the claude provider adds /v1/messages
---     to its endpoint, the openai one /chat/completions.
---   gp.nvim v3.9.0: README.md "Configuration" / lua/gp/config.lua (providers.<name> =
---     {disable, endpoint, secret}; openai's endpoint ends in /chat/completions, anthropic's in
---     /v1/messages).
---   CopilotChat.nvim v4.7.4: README.md "Providers" (model; providers.<name> = {disabled,
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
  providers = {
    ["*"] = { __inherited_from = "string", endpoint = "string", model = "string", api_key_name = "string", use_response_api = "boolean" },
  },
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
