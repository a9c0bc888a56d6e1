-- The ready-made chat plugin setups: their tables against the option names each plugin
-- documents (versions in plugin_docs.lua), their bad input, and what they do while the gateway
-- is off. With the gateway on, test_live_chat.lua sends real requests through them.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))
local docs = dofile(vim.fs.joinpath(H.plugin_dir, "tests", "plugin_docs.lua"))

-- Stand-ins for the two plugin modules the setups call at request time (the plugins are not
-- installed here): they record what they are given.
local extended = {}
package.preload["codecompanion.adapters"] = function()
  return {
    extend = function(name, overrides)
      table.insert(extended, { name = name, overrides = overrides })
      return overrides
    end,
  }
end
local prepared = {}
package.preload["CopilotChat.config.providers"] = function()
  return {
    copilot = {
      prepare_input = function(inputs, opts)
        table.insert(prepared, { "input", inputs, opts })
        return { model = opts.model.id, messages = inputs } -- as Copilot's: the model by its id
      end,
      prepare_output = function(output)
        table.insert(prepared, { "output", output })
        return { content = output.text }
      end,
    },
  }
end

-- CopilotChat.nvim v4.7.4's choice of a chat's provider, written here after its
-- lua/CopilotChat/client.lua (Client:models, Client:ask) without the HTTP: providers are taken
-- in name order; a model whose id an earlier provider already offered is renamed
-- `<id>:<provider>`; ask() looks the chat's `model` up by id, takes that model's provider, and
-- gives its prepare_input the id with `:<provider>` removed (gsub, the name read as a Lua
-- pattern). Returns the provider's name and the request body it prepared.
local function copilotchat_ask(providers, model)
  local names = vim.tbl_keys(providers)
  table.sort(names)
  local models = {}
  for _, provider_name in ipairs(names) do
    local provider = providers[provider_name]
    if not provider.disabled and provider.get_models then
      local headers = provider.get_headers and provider.get_headers() or {}
      for _, m in ipairs(provider.get_models(headers)) do
        m.provider = provider_name
        if models[m.id] then
          m.id = m.id .. ":" .. provider_name
        end
        models[m.id] = m
      end
    end
  end
  local chosen = models[model]
  if not chosen then
    return nil, "Model not found: " .. model
  end
  local id = model:gsub(":" .. chosen.provider .. "$", "")
  local options = { model = vim.tbl_extend("force", chosen, { id = id }) }
  local body = providers[chosen.provider].prepare_input({ { role = "user", content = "hi" } }, options)
  return chosen.provider, body
end

--- Copilot's own provider as CopilotChat has it, offering its default model gpt-4.1.
local function with_copilot(setup)
  return vim.tbl_extend("force", {
    copilot = {
      get_headers = function()
        return { Authorization = "Bearer gho_copilot" }
      end,
      get_models = function()
        return { { id = "gpt-4.1", name = "GPT-4.1" }, { id = "gpt-4o", name = "GPT-4o" } }
      end,
      prepare_input = function()
        return { model = "copilot's" }
      end,
    },
  }, setup.providers)
end

local function raises(fn, pattern)
  local ok, err = pcall(fn)
  return not ok and tostring(err):find(pattern) ~= nil, tostring(err)
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  local setups = require("ctxlayer.setups")
  ctxlayer.setup({ cmd = H.cmd, gateway = false })
  vim.cmd.edit("README.md")
  H.must(H.wait_figure() ~= nil, "the daemon answers")

  -- Gateway off: gateway() says how to turn it on; :Ctxlayer gateway too.
  local urls, why = ctxlayer.gateway()
  H.ok(urls == nil and why and why:find("gateway = true", 1, true) ~= nil and why:find("enabled = true", 1, true) ~= nil,
    "gateway() is nil with a message saying how to turn it on", why)
  H.clear_notes()
  vim.cmd("Ctxlayer gateway")
  local note = H.note("the gateway is off")
  H.ok(note and note.level == vim.log.levels.ERROR, ":Ctxlayer gateway says it is off", note and note.msg)
  vim.cmd("Ctxlayer gateway gemini")
  H.ok(H.note('gateway: expected openai or anthropic, got "gemini"') ~= nil, ":Ctxlayer gateway names a bad argument")

  -- Plugins that take the URL as a string get their own table back unchanged, and a warning.
  local base = { agents = { { name = "mine", chat = true, model = { model = "gpt-4.1" } } } }
  H.clear_notes()
  H.eq(setups.gp(nil, base), base, "gp: with the gateway off, your table comes back unchanged")
  H.ok(H.note("left pointing at the provider itself") ~= nil, "gp: and a warning says so")
  H.eq(setups.avante({ model = "gpt-4.1" }, { behaviour = { auto_suggestions = false } }), { behaviour = { auto_suggestions = false } },
    "avante: with the gateway off, your table comes back unchanged")

  -- The checker itself catches an undocumented key and a wrong type.
  H.eq(#docs.check({ adapters = { http = { mine = "not a function" } }, strategies = {} }, docs.codecompanion), 2,
    "the documented-options check reports what is not documented")

  -- CodeCompanion: data the plugin documents, the adapter built only when CodeCompanion asks.
  local cc = setups.codecompanion({ model = "gpt-4.1" }, { display = { chat = { window = { layout = "vertical" } } } })
  local display = cc.display
  cc.display = nil
  H.eq(docs.check(cc, docs.codecompanion), {}, "codecompanion: every key is a documented option")
  H.eq(display, { chat = { window = { layout = "vertical" } } }, "codecompanion: the rest of your table is kept")
  H.eq(cc.interactions.chat.adapter, "ctxlayer", "codecompanion: the chat uses the ctxlayer adapter")
  H.eq(cc.interactions.chat.opts.context_management.enabled, false, "codecompanion: its own context management is off (no double compaction)")
  H.eq(#extended, 0, "codecompanion: nothing is required before CodeCompanion resolves the adapter")
  local adapter = cc.adapters.http.ctxlayer()
  H.eq(extended[1] and extended[1].name, "openai_compatible", "codecompanion: the adapter extends openai_compatible")
  H.eq(docs.check(adapter, docs.codecompanion_adapter, "extend"), {}, "codecompanion: the adapter's fields are documented ones")
  H.eq(adapter.schema.model.default, "gpt-4.1", "codecompanion: your model is kept")
  H.eq(adapter.env.api_key, "OPENAI_API_KEY", "codecompanion: your key is read where CodeCompanion reads it")
  H.eq({ adapter.env.chat_url, adapter.env.models_endpoint }, { "/chat/completions", "/models" },
    "codecompanion: the paths follow the gateway's /v1 base URL")
  H.ok(raises(adapter.env.url, "the gateway is off"), "codecompanion: at request time the URL says the gateway is off")

  local cc_claude = setups.codecompanion({ format = "anthropic", api_key = "cmd:pass show anthropic", name = "ctx-claude" })
  local claude = cc_claude.adapters.http["ctx-claude"]()
  H.eq(extended[2] and extended[2].name, "anthropic", "codecompanion anthropic: extends the anthropic adapter")
  H.eq(docs.check(claude, docs.codecompanion_adapter, "extend"), {}, "codecompanion anthropic: documented fields only")
  H.eq(claude.url, "${ctxlayer_url}/v1/messages", "codecompanion anthropic: the messages route under the gateway")
  H.eq(claude.opts.compaction, false, "codecompanion anthropic: server-side compaction off")
  H.eq(claude.env.api_key, "cmd:pass show anthropic", "codecompanion anthropic: your key command is kept")
  H.eq(cc_claude.interactions.chat.adapter, "ctx-claude", "codecompanion: the adapter takes the name you gave")

  -- CopilotChat: a provider with get_url, CopilotChat's own OpenAI-shaped handling, your model.
  vim.env.CTXLAYER_TEST_KEY = "sk-test-123"
  local cpc = setups.copilotchat({ model = "gpt-4.1", api_key = "CTXLAYER_TEST_KEY" }, { window = { width = 0.4 } })
  local window = cpc.window
  cpc.window = nil
  H.eq(docs.check(cpc, docs.copilotchat), {}, "copilotchat: every key is a documented option")
  H.eq(window, { width = 0.4 }, "copilotchat: the rest of your table is kept")
  -- Named for our provider: Copilot offers gpt-4.1 too, and a plain "gpt-4.1" was Copilot's.
  H.eq(cpc.model, "gpt-4.1:ctxlayer", "copilotchat: your model, as ctxlayer's, is the chat's")
  local provider = cpc.providers.ctxlayer
  H.eq(provider.get_models(), { { id = "gpt-4.1:ctxlayer", name = "gpt-4.1 (ctxlayer)" } },
    "copilotchat: the provider offers your model")
  H.eq(provider.get_headers().Authorization, "Bearer sk-test-123", "copilotchat: your key from its variable")
  H.ok(raises(provider.get_url, "the gateway is off"), "copilotchat: get_url says the gateway is off")
  local input = provider.prepare_input({ { role = "user", content = "hi" } }, { model = { id = "gpt-4.1" } })
  H.eq(input, { model = "gpt-4.1", messages = { { role = "user", content = "hi" } } },
    "copilotchat: requests are shaped by CopilotChat's own copilot provider")
  H.eq(#prepared, 1, "copilotchat: that provider was really asked")

  -- Which provider CopilotChat gives the chat, next to Copilot's own offering gpt-4.1.
  local chosen, body = copilotchat_ask(with_copilot(cpc), cpc.model)
  H.eq({ chosen, body and body.model }, { "ctxlayer", "gpt-4.1" },
    "copilotchat: a model Copilot offers too goes through ctxlayer, named as the provider knows it")
  local own = setups.copilotchat({ model = "llama-3.3-70b", api_key = "CTXLAYER_TEST_KEY" })
  chosen, body = copilotchat_ask(with_copilot(own), own.model)
  H.eq({ chosen, body and body.model }, { "ctxlayer", "llama-3.3-70b" },
    "copilotchat: a model Copilot lacks goes through ctxlayer")
  -- A name CopilotChat's pattern does not strip (the - of "my-gw"): the request names the
  -- model all the same.
  local dashed = setups.copilotchat({ model = "gpt-4.1", api_key = "CTXLAYER_TEST_KEY", name = "my-gw" })
  chosen, body = copilotchat_ask(with_copilot(dashed), dashed.model)
  H.eq({ chosen, body and body.model }, { "my-gw", "gpt-4.1" },
    "copilotchat: a provider name with - routes and names the model too")
  vim.env.CTXLAYER_TEST_KEY = nil
  H.ok(raises(provider.get_headers, "%$CTXLAYER_TEST_KEY is not set"), "copilotchat: a missing key names its variable")

  -- Bad input is an error naming the field.
  H.ok(raises(function() setups.copilotchat({}) end, "opts%.model: expected a model name"), "copilotchat without a model names opts.model")
  H.ok(raises(function() setups.codecompanion({ format = "gemini" }) end, 'opts%.format: expected "openai" or "anthropic"'),
    "a bad format is named")
  H.ok(raises(function() setups.avante({ modle = "x" }) end, "opts%.modle: unknown option %(known: api_key, format, model, name%)"),
    "an unknown option is named with the known ones")
  H.ok(raises(function() setups.gp({ api_key = 42 }) end, "opts%.api_key: expected a string or a command"), "a bad key is named")
  H.ok(raises(function() setups.gp(nil, "not a table") end, "base: expected the plugin's setup table"), "a bad base table is named")
end)
