-- Without a session (setup with session = false) the status line shows the
-- workspace segment's tokens (no percent: the daemon gives none), then the last trimmed chat's
-- figure, the daemon's percent with it.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd, session = false, model = "gpt-4o" })
  vim.cmd.edit("src/app.py")
  local client = H.client()
  local first = H.wait_figure()
  H.must(first ~= nil, "the status line shows a figure", ctxlayer.statusline())
  local b = ctxlayer.budget()
  H.eq(b and b.source, "segment", "the figure comes from the segment")
  H.eq(b and b.state.session_id, nil, "no session was opened")
  local segment = ctxlayer.request("ctx/segment", {})
  H.eq(b and b.used, segment and segment.tokens, "used is the segment's tokens")
  H.eq(b and b.percent, nil, "no percent before a chat: the editor computes none")
  H.ok(not ctxlayer.statusline():find("%%"), "the statusline shows no percent", ctxlayer.statusline())
  local empty = ctxlayer.request("ctx/trim", { messages = {}, model = "gpt-4o" })
  H.eq(b and b.limit, empty and empty.budget, "the limit is the model's default budget")

  -- A new untracked file changes tree and git: ctx/segmentChanged moves the figure.
  local versions = {}
  vim.api.nvim_create_autocmd("User", {
    pattern = "CtxlayerStatus",
    callback = function(ev)
      local s = ev.data.status
      if s and s.segment then
        versions[s.segment.version] = s.segment.tokens
      end
    end,
  })
  H.write_file("notes.md", { "# Notes", "", "Things to remember about the app module and its entry point." })
  local second = H.wait_figure(first)
  H.ok(second ~= nil, "the figure moves after :write", ("%s -> %s"):format(first, ctxlayer.statusline()))
  local seg2 = ctxlayer.request("ctx/segment", {})
  H.ok(seg2 and seg2.version > segment.version, "the segment version went up")
  H.ok(H.wait(function()
    return ctxlayer.budget().used == seg2.tokens
  end), "used follows the new segment", vim.inspect({ ctxlayer.budget().used, seg2 and seg2.tokens }))
  H.ok(H.wait(function()
    local st = ctxlayer.budget().state
    return st.segment.parts and #st.segment.parts > 0 and st.segment.version == seg2.version
  end), "the segment's parts are fetched after the notification")

  -- The last trimmed chat adds to the segment.
  local messages = {
    { role = "system", content = "You are terse.", pinned = true },
    { role = "user", content = "What does src/app.py print?" },
  }
  local trimmed = ctxlayer.trim(messages, { budget = 200 })
  H.ok(trimmed and trimmed.tokens > 0, "trim() answers")
  H.eq(ctxlayer.budget().used, trimmed and trimmed.tokens, "used is the last trim's tokens")
  H.eq(ctxlayer.budget().source, "trim", "the figure is the trim's")
  H.ok(trimmed and trimmed.percent > 5, "the daemon gives the trim's percent", vim.inspect(trimmed))
  H.eq(ctxlayer.budget().percent, trimmed and trimmed.percent, "the percent shown is the daemon's")
  H.ok(ctxlayer.statusline():find(("%d%%%%"):format(math.floor(trimmed.percent + 0.5))) ~= nil,
    "the statusline shows the daemon's percent", ctxlayer.statusline())

  -- Rules and modes need a session: the command says so.
  H.clear_notes()
  vim.cmd("Ctxlayer rule Prefer small diffs")
  H.ok(H.note("ctx/session/addRule needs the workspace's session; none is open %(setup with session = false") ~= nil, "without a session :Ctxlayer rule explains why")

  -- inspect without a session shows the last trimmed chat on the page.
  local opened
  require("ctxlayer.config").current.open = function(path)
    opened = path
  end
  vim.cmd("Ctxlayer inspect")
  local html = opened and table.concat(vim.fn.readfile(opened), "\n") or ""
  H.ok(html:find("What does src/app.py print?", 1, true) ~= nil, "the inspector page shows the trimmed chat")
  H.ok(html:find("https?://[%w.]+/[%w/]+%.js") == nil, "the page loads no remote script")

  -- The assembled prompt without a session is the layered system prompt.
  local assembled = ctxlayer.assemble()
  H.ok(assembled and assembled.sections ~= nil, "assemble() falls back to ctx/systemPrompt")
end)
