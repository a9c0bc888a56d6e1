-- A live chat through the daemon's HTTP gateway, as a Neovim chat plugin sends it: requests
-- from Neovim's own vim.system + curl to the URLs the plugin reports (through the ready-made
-- setups), answered by the stand-in upstream; then the status line shows that chat's figure,
-- :Ctxlayer chats lists it, :Ctxlayer why says what its last turn cut, :checkhealth reports
-- the gateway.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))
local docs = dofile(vim.fs.joinpath(H.plugin_dir, "tests", "plugin_docs.lua"))

local upstream = {
  openai = assert(vim.env.CTXLAYER_TEST_UPSTREAM_OPENAI, "set CTXLAYER_TEST_UPSTREAM_OPENAI (the stand-in's openai URL)"),
  anthropic = assert(vim.env.CTXLAYER_TEST_UPSTREAM_ANTHROPIC, "set CTXLAYER_TEST_UPSTREAM_ANTHROPIC"),
}

--- POST a JSON body with curl, the way gp.nvim and CopilotChat do: status, body, headers.
local function post(url, headers, body)
  local file = vim.fn.tempname()
  vim.fn.writefile({ vim.json.encode(body) }, file)
  local header_file = vim.fn.tempname()
  local args = { "curl", "--no-buffer", "-sS", "-D", header_file, "-w", "\n%{http_code}", url, "-H", "Content-Type: application/json" }
  for _, h in ipairs(headers) do
    vim.list_extend(args, { "-H", h })
  end
  vim.list_extend(args, { "-d", "@" .. file })
  local out = vim.system(args, { text = true }):wait(H.TIMEOUT)
  local stdout = out.stdout or ""
  local code = tonumber(stdout:match("(%d+)%s*$"))
  local text = stdout:gsub("\n%d+%s*$", "")
  local ok, lines = pcall(vim.fn.readfile, header_file)
  return code, text, ok and table.concat(lines, "\n"):lower() or "", out.stderr
end

local function health_text()
  vim.cmd("checkhealth ctxlayer")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

--- The status line once it shows a live chat other than `not_this` (a conversationId).
local function wait_chat(not_this)
  return H.wait(function()
    local b = require("ctxlayer").budget()
    if b and b.conversation and b.conversation ~= not_this and require("ctxlayer").statusline():match("^ctx chat ") then
      return b
    end
  end)
end

--- A long chat: `turns` pairs of distinct, number-heavy messages (no two alike).
local function long_chat(turns)
  local messages = { { role = "system", content = "You are a build assistant. Answer briefly." } }
  for i = 1, turns do
    local lines = {}
    for j = 1, 250 do
      lines[j] = ("turn %d line %d: request %d took %d ms on worker %d, cache key k%x"):format(i, j, i * 1000 + j, (i * 37 + j * 11) % 997, j % 17, i * 7919 + j)
    end
    table.insert(messages, { role = "user", content = "Here is log part " .. i .. ":\n" .. table.concat(lines, "\n") })
    table.insert(messages, { role = "assistant", content = ("Part %d read: %d lines."):format(i, #lines) })
  end
  table.insert(messages, { role = "user", content = "Which request was slowest in the last part?" })
  return messages
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  local setups = require("ctxlayer.setups")
  ctxlayer.setup({
    cmd = H.cmd,
    gateway = { openai_base_url = upstream.openai, anthropic_base_url = upstream.anthropic },
  })
  vim.cmd.edit("README.md")
  local client = H.client()
  H.must(client ~= nil, "the daemon started")
  local workspace_figure = H.wait_figure()
  H.must(workspace_figure ~= nil, "before any chat, the status line shows the workspace figure", ctxlayer.statusline())

  local ann = require("ctxlayer.client").announcement(client)

  -- The gateway's URLs, from the initialize result, shown and copied.
  local urls, err = ctxlayer.gateway()
  H.must(urls ~= nil, "gateway() returns the URLs", err)
  H.ok(urls.openai:match("^http://[%w%.%[%]:]+:%d+/v1$") ~= nil, "the OpenAI base URL ends in /v1", urls.openai)
  H.ok(urls.anthropic:match("^http://[%w%.%[%]:]+:%d+/?$") ~= nil, "the Anthropic base URL is the gateway's root", urls.anthropic)
  H.eq(urls, { openai = ann.gateway.openai, anthropic = ann.gateway.anthropic }, "they are the announced ones")
  local reg = require("ctxlayer.gateway").register()
  vim.cmd("Ctxlayer gateway")
  H.eq(vim.fn.getreg(reg, 1, true), { urls.openai, urls.anthropic }, ":Ctxlayer gateway copies both URLs to register " .. reg)
  vim.cmd("Ctxlayer gateway anthropic")
  H.eq(vim.fn.getreg(reg, 1, true), { urls.anthropic }, ":Ctxlayer gateway anthropic copies that one")

  local health = health_text()
  H.ok(health:find("OK client %d+ gateway: openai " .. vim.pesc(urls.openai)) ~= nil and health:find("GET /health answered 200", 1, true) ~= nil,
    ":checkhealth ctxlayer reports the gateway and its /health answer", health)

  -- gp.nvim's table, and an OpenAI-shaped streaming request sent the way gp sends it.
  local gp = setups.gp(nil, { agents = {} })
  H.eq(docs.check(gp, { providers = docs.gp.providers, agents = "table" }), {}, "gp: every key is a documented option")
  local endpoint = gp.providers.openai.endpoint
  H.eq(endpoint, urls.openai .. "/chat/completions", "gp: the openai provider's endpoint is the gateway")
  local code, body, headers = post(endpoint, { "Authorization: Bearer test-key" }, {
    model = "gpt-4o",
    stream = true,
    messages = {
      { role = "system", content = "You are terse." },
      { role = "user", content = "What does src/app.py print?" },
    },
  })
  H.eq(code, 200, "the streamed request went through the gateway")
  H.ok(body:find("data: ", 1, true) ~= nil, "the answer streams back (SSE)", body:sub(1, 300))
  H.ok(headers:find("x%-ctxlayer%-tokens: %d+") ~= nil, "the answer carries x-ctxlayer-tokens", headers)
  local first = wait_chat()
  H.must(first ~= nil, "the status line moves to that chat's figure", ctxlayer.statusline())
  H.eq(first.source, "gateway", "the figure is the gateway's")
  H.ok(first.used > 0 and first.limit > first.used, "the chat's used and limit are the daemon's", vim.inspect(first))
  H.ok(ctxlayer.statusline() ~= workspace_figure, "it is not the workspace figure", ctxlayer.statusline())
  -- The next turn of that chat: the provider reads its unchanged start from its cache, and the
  -- status line says how much (the gateway reports the provider's usage).
  local code2 = post(endpoint, { "Authorization: Bearer test-key" }, {
    model = "gpt-4o",
    messages = {
      { role = "system", content = "You are terse." },
      { role = "user", content = "What does src/app.py print?" },
      { role = "assistant", content = "It prints hello." },
      { role = "user", content = "And what does main() return?" },
    },
  })
  H.eq(code2, 200, "the next turn went through the gateway")
  local cached = H.wait(function()
    local b = ctxlayer.budget()
    return b and b.conversation == first.conversation and b.cached and b.cached > 0 and b
  end)
  H.ok(cached ~= nil, "the turn's cached tokens reach the status line's chat", vim.inspect(ctxlayer.budget()))
  H.ok(ctxlayer.statusline():match("^ctx chat [%d.]+k?/[%d.]+k? %d+%% %([%d.]+k? cached") ~= nil, "shown after the figure", ctxlayer.statusline())

  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local shown = H.note("^ctxlayer: ctx chat ")
  H.ok(shown and shown.msg:find("live chat " .. first.conversation, 1, true) ~= nil, ":Ctxlayer status names the live chat", shown and shown.msg)
  local drawn = vim.api.nvim_eval_statusline(ctxlayer.statusline_hl(), { highlights = true })
  H.eq(drawn.str, ctxlayer.statusline(), "the highlighted status line draws the chat's figure")
  H.ok(drawn.highlights[1] and drawn.highlights[1].group:match("^Ctxlayer") ~= nil, "in today's ctxlayer colours")

  -- What a plugin asks beside that chat (a title of its question, a small model, no session
  -- id): the status line stays on the chat, and it is not listed.
  local tcode = post(endpoint, { "Authorization: Bearer test-key" }, {
    model = "gpt-4o-mini",
    messages = {
      { role = "system", content = "You write short titles." },
      { role = "user", content = "A title for this question: And what does main() return?" },
    },
  })
  H.eq(tcode, 200, "the title went through the gateway")
  local models -- asked after the title's budget came: the daemon sends in order
  require("ctxlayer.client").request(client, "ctx/conversations", {}, function(result)
    models = vim.tbl_map(function(c)
      return c.model
    end, result.conversations or {})
  end, function(e)
    models = { vim.inspect(e) }
  end)
  H.eq(H.wait(function()
    return models
  end), { "gpt-4o" }, "the title is not listed as a chat")
  H.eq(ctxlayer.budget().conversation, first.conversation, "the status line stays on the chat")

  -- avante's table, and a non-streaming Anthropic-shaped request: the live chat is now that one.
  local av = setups.avante({ format = "anthropic", model = "claude-sonnet-4" })
  H.eq(docs.check(av, docs.avante), {}, "avante: every key is a documented option")
  H.eq(av.providers.ctxlayer.__inherited_from, "claude", "avante: the anthropic provider inherits from claude")
  H.eq(av.providers.ctxlayer.endpoint, urls.anthropic, "avante: its endpoint is the gateway's root (avante adds /v1/messages)")
  local av_openai = setups.avante({ model = "gpt-4.1" })
  H.eq(docs.check(av_openai, docs.avante), {}, "avante openai: every key is a documented option")
  H.eq(av_openai.providers.ctxlayer.endpoint, urls.openai, "avante: the openai provider's endpoint is the /v1 base")
  H.eq(av_openai.providers.ctxlayer.use_response_api, false, "avante: Chat Completions, the route the gateway serves")
  local acode, abody = post(urls.anthropic:gsub("/$", "") .. "/v1/messages", { "x-api-key: test-key", "anthropic-version: 2023-06-01" }, {
    model = "claude-sonnet-4",
    max_tokens = 256,
    system = "You are terse.",
    messages = { { role = "user", content = "Name one prime number." } },
  })
  H.eq(acode, 200, "the Anthropic request went through the gateway")
  local decoded = pcall(vim.json.decode, abody) and vim.json.decode(abody) or {}
  H.ok(type(decoded.content) == "table", "the answer is an Anthropic message", abody:sub(1, 300))
  local second = wait_chat(first.conversation)
  H.must(second ~= nil, "the status line follows the chat that last went through", ctxlayer.statusline())

  -- The request-time URLs of CodeCompanion and CopilotChat are the same gateway.
  package.preload["codecompanion.adapters"] = function()
    return { extend = function(_, overrides) return overrides end }
  end
  local cc = setups.codecompanion({ model = "gpt-4o" }).adapters.http.ctxlayer()
  H.eq(cc.env.url(), urls.openai, "codecompanion: env.url is the gateway at request time")
  local cpc = setups.copilotchat({ model = "gpt-4o" })
  H.eq(cpc.providers.ctxlayer.get_url(), urls.openai .. "/chat/completions", "copilotchat: get_url is the gateway's chat route")

  -- :Ctxlayer chats lists both, the live one marked; picking the first makes it live again.
  vim.cmd("Ctxlayer chats")
  local listed = H.wait(function()
    local lines = H.buffer_lines("ctxlayer://chats")
    return lines and #lines >= 3 and lines
  end)
  local text = listed and table.concat(listed, "\n") or ""
  H.ok(text:find("* " .. second.conversation, 1, true) ~= nil, ":Ctxlayer chats marks the live chat", text)
  H.ok(text:find(first.conversation, 1, true) ~= nil, ":Ctxlayer chats lists the earlier chat too", text)
  vim.cmd("Ctxlayer chats " .. first.conversation)
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.conversation == first.conversation
  end), ":Ctxlayer chats ID puts that chat in the status line")

  -- A chat over its budget: the last turn cut something, :Ctxlayer why says what and why, and
  -- a compaction (summarized entries) is announced in one line.
  H.clear_notes()
  local lcode = post(endpoint, { "Authorization: Bearer test-key" }, { model = "gpt-4o", messages = long_chat(40) })
  H.eq(lcode, 200, "the long chat went through the gateway")
  local long = wait_chat(first.conversation)
  H.must(long ~= nil and long.conversation ~= second.conversation, "the long chat is live", vim.inspect(long))
  H.ok(long.used <= long.limit, "what was sent fits the chat's limit", vim.inspect(long))
  local why, cuts = H.why(long.conversation)
  H.ok(#cuts > 0, "it lists what was cut, each with its reason", table.concat(why, "\n"))
  -- The daemon's notice of that request comes with its budget: shown once, one prefix.
  local notice = H.wait(function()
    return H.note("^ctxlayer: %a.- to fit ")
  end)
  H.ok(notice ~= nil, "the daemon's notice says what the turn cut to fit", vim.inspect(H.notes))
  H.ok(H.note("ctxlayer: ctxlayer:") == nil, "with one prefix")
end)
