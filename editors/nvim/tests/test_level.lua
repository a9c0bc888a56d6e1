-- The status line's colour follows the figure's share of its budget, also when the daemon gives
-- no percent (the workspace segment's figure, without a session). Before, such a figure was
-- coloured ok whatever its size: `session = false, budget = 50` drew
-- `%#CtxlayerOk#ctx 127/50%*`.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd, session = false, budget = 10 })
  vim.cmd.edit("README.md")
  H.must(H.client() ~= nil, "the daemon starts")
  H.must(H.wait_figure() ~= nil, "the status line shows the segment's figure", ctxlayer.statusline())
  local f = ctxlayer.budget()
  H.must(f and f.source == "segment" and f.percent == nil and f.used > f.limit,
    "the figure is the segment's, over its budget of 10, with no percent", vim.inspect(f))
  H.ok(not ctxlayer.statusline():find("%", 1, true), "no percent is shown",
    ctxlayer.statusline())

  local drawn = vim.api.nvim_eval_statusline(ctxlayer.statusline_hl(), { highlights = true })
  H.eq(drawn.highlights[1] and drawn.highlights[1].group, "CtxlayerError",
    "statusline_hl() colours an over-budget figure as an error")
  H.eq(ctxlayer.lualine().color(), "CtxlayerError", "so does the lualine component")

  -- the daemon's percent, when there is one, decides: a small trimmed chat is ok
  local trimmed = ctxlayer.trim({ { role = "user", content = "hello" } }, { budget = 1000 })
  H.must(trimmed and trimmed.percent and trimmed.percent < 70, "a small chat is trimmed",
    vim.inspect(trimmed))
  drawn = vim.api.nvim_eval_statusline(ctxlayer.statusline_hl(), { highlights = true })
  H.eq(drawn.highlights[1] and drawn.highlights[1].group, "CtxlayerOk",
    "its figure, with the daemon's percent, is ok")
  H.eq(ctxlayer.lualine().color(), "CtxlayerOk", "in lualine too")

  -- the colour follows the percent as shown: 89.5% reads "90%" and was yellow (69.6% read
  -- "70%" uncoloured); README: yellow from 70%, red from 90%
  local status = require("ctxlayer.status")
  for _, case in ipairs({ { 69.4, "ok" }, { 69.6, "warn" }, { 89.4, "warn" }, { 89.5, "error" },
    { 89.96, "error" } }) do
    local f = { used = case[1] * 1000, limit = 100000, percent = case[1] }
    H.eq(status.figure_level(f), case[2],
      ("%.2f%% (shown %d%%) is %s"):format(case[1], math.floor(case[1] + 0.5), case[2]))
  end
end)
