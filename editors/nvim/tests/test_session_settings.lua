-- The workspace session keeps its id across restarts, and reopening it answers it unchanged
-- (PROTOCOL.md): options changed between two runs reach it through ctx/session/configure.
-- Each run here is what a new Neovim does: setup() with the user's options, then a new daemon
-- on the same state folder. Before, the second run's status kept the first run's settings
-- (setup model claude-sonnet-4, budget 60000, mode short; session gpt-4o / 20000 / deep).
-- A daemon without ctx/session/configure (older, same protocol) is not refused: the user is
-- told which settings the session keeps.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local ctxlayer = require("ctxlayer")
local client = require("ctxlayer.client")
local status = require("ctxlayer.status")
--- How long a run may take to show its session: the daemon starts in about a second.
local RUN_MS = 30000

--- A new run with `opts`: the daemon stopped, setup() again, a new daemon for README.md. The
--- status once it shows the session measured with `model` (nil when it never did).
local last = 0
local function run(opts, model)
  client.stop()
  ctxlayer.setup(vim.tbl_extend("force", { cmd = H.cmd }, opts))
  if vim.api.nvim_buf_get_name(0) == "" then
    vim.cmd.edit("README.md")
  end
  local started = H.wait(function()
    for _, c in ipairs(vim.lsp.get_clients({ name = client.NAME })) do
      if c.id > last and c.initialized then
        return c
      end
    end
  end, RUN_MS)
  H.must(started ~= nil, "a new daemon starts for " .. vim.inspect(opts, { newline = "" }))
  last = started.id
  return H.wait(function()
    local b, c = ctxlayer.budget(), client.get()
    local st = b and b.source == "session" and c and status.get(c.id)
    return (st and st.model == model and st.budget and st.budget.model == model) and b or nil
  end, RUN_MS)
end

--- The session as the daemon answers it now (a reopen changes nothing).
local function session()
  local sid = client.session_id(H.root)
  local opened = H.must(ctxlayer.request("ctx/session/open", { sessionId = sid }), "the session reopens")
  return { model = opened.model, budget = opened.budget, mode = opened.mode }
end

--- The session's budget as the daemon answers it now, without a check of its own (polled).
local function session_budget()
  local opened = ctxlayer.request("ctx/session/open", { sessionId = client.session_id(H.root) })
  return opened and opened.budget
end

H.run(function()
  local first = run({ model = "gpt-4o", budget = 20000, mode = "deep" }, "gpt-4o")
  H.must(first ~= nil, "the first run shows its session", ctxlayer.statusline())
  H.eq(first.limit, 20000, "first run: the status line's limit is the configured budget")
  H.eq(session(), { model = "gpt-4o", budget = 20000, mode = "deep" }, "first run: the session has the options")

  local second = run({ model = "claude-sonnet-4", budget = 60000, mode = "short" }, "claude-sonnet-4")
  H.must(second ~= nil, "the second run's session is measured with the new model",
    ("status '%s', model %s"):format(ctxlayer.statusline(), vim.inspect(client.get() and status.get(client.get().id).model)))
  H.eq(second.limit, 60000, "second run: the limit is the new budget")
  H.eq(status.get(client.get().id).mode, "short", "second run: the status shows the new mode")
  H.ok(ctxlayer.statusline():find("/60k", 1, true) ~= nil, "the status line says 60k", ctxlayer.statusline())
  H.eq(session(), { model = "claude-sonnet-4", budget = 60000, mode = "short" }, "second run: the session has the new options")

  -- a budget left unset is the model's default again ("Default: the model's window minus the
  -- output reserve"): before resetBudget the session kept 60000 for good
  local third = run({ model = "claude-sonnet-4", mode = "debug" }, "claude-sonnet-4")
  H.must(third ~= nil, "the third run shows its session", ctxlayer.statusline())
  local fresh = H.must(ctxlayer.request("ctx/session/open", { sessionId = "ref-default", model = "claude-sonnet-4" }),
    "a session opened without a budget")
  H.ok(fresh.budget ~= 60000, "the model's default is not the earlier option", fresh.budget)
  H.ok(H.wait(function()
    return session().mode == "debug" and session().budget == fresh.budget
  end, RUN_MS), "third run: the mode changed, the budget is the model's default", vim.inspect(session()))
  H.eq(session(), { model = "claude-sonnet-4", budget = fresh.budget, mode = "debug" }, "third run: the session has the options")
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.limit == fresh.budget
  end, RUN_MS), "third run: the status line's limit is the model's default", ctxlayer.statusline())

  -- setup() again while the daemon runs (a re-sourced config): the session takes the new
  -- budget at once. Before, it kept its own while :Ctxlayer assemble sent the new one
  -- (status 133/5k, assembled 133/8k, the session's limit still 5000).
  local running = client.get().id
  ctxlayer.setup({ cmd = H.cmd, model = "claude-sonnet-4", budget = 8000, mode = "debug" })
  H.ok(H.wait(function()
    return session_budget() == 8000
  end, RUN_MS), "setup() again: the running session takes the new budget", session_budget())
  H.eq(client.get().id, running, "without a new daemon")
  H.ok(H.wait(function()
    local b = ctxlayer.budget()
    return b and b.source == "session" and b.limit == 8000
  end, RUN_MS), "the status line's limit is the new budget", ctxlayer.statusline())
  local assembled = ctxlayer.assemble()
  H.eq(assembled and assembled.budget, 8000, "and :Ctxlayer assemble agrees with it")
  local measured = ctxlayer.request("ctx/session/budget", { sessionId = client.session_id(H.root) })
  H.eq(measured and measured.limit, 8000, "as does the daemon's measure of the session")
  ctxlayer.setup({ cmd = H.cmd, model = "claude-sonnet-4", mode = "debug" })
  H.ok(H.wait(function()
    return session_budget() == fresh.budget
  end, RUN_MS), "setup() again without a budget: back to the model's default", session_budget())

  -- a daemon of this protocol without ctx/session/configure: taken, and the user told
  local real = client.announcement
  local full = vim.deepcopy(real(client.get()))
  local older = vim.tbl_extend("force", full, { methods = vim.tbl_filter(function(m)
    return m ~= "ctx/session/configure"
  end, full.methods) })
  local fake = { server_capabilities = { experimental = { ctxlayer = older } } }
  H.eq(client.problem(fake), nil, "a daemon lacking only ctx/session/configure is not refused")
  client.announcement = function(c)
    local a = real(c)
    return next(a) and vim.tbl_extend("force", a, { methods = older.methods }) or a
  end
  H.clear_notes()
  local fourth = run({ model = "claude-sonnet-4", budget = 20000, mode = "debug" }, "claude-sonnet-4")
  client.announcement = real
  H.must(fourth ~= nil, "with the older daemon the session still shows", ctxlayer.statusline())
  local said = H.wait(function()
    return H.note("cannot change the workspace session's settings")
  end, RUN_MS)
  H.ok(said and said.level == vim.log.levels.WARN and said.msg:find(("budget %d (opts.budget: 20000)"):format(fresh.budget), 1, true)
    and said.msg:find("update ctxlayer", 1, true), "the user is told which setting the session keeps",
    said and said.msg)
  H.eq(fourth.limit, fresh.budget, "and the status line shows the session's own budget, not the option's")
end)
