-- The daemon's announcement in its initialize result (capabilities.experimental.ctxlayer):
-- the plugin takes the modes, the default mode and the default budget from it instead of
-- copies of its own, and reports a configured mode the daemon does not have.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local ctxlayer = require("ctxlayer")
  ctxlayer.setup({ cmd = H.cmd, mode = "fast" }) -- not one of the daemon's modes
  vim.cmd.edit("README.md")
  local client = H.client()
  H.must(client ~= nil, "the daemon started")
  H.must(H.wait_figure() ~= nil, "the status line shows a figure", ctxlayer.statusline())

  local ann = require("ctxlayer.client").announcement(client)
  H.must(type(ann.modes) == "table" and next(ann.modes) ~= nil, "the daemon announces its modes", vim.inspect(ann))
  local modes = vim.tbl_keys(ann.modes)
  table.sort(modes)
  H.ok(type(ann.defaultBudget) == "number" and ann.defaultBudget > 0, "the daemon announces its default budget")
  H.ok(vim.tbl_contains(modes, ann.defaultMode), "the default mode is one of the announced modes", vim.inspect(ann.defaultMode))
  H.eq(client.config.init_options.mode, nil, "the mode is not sent in initializationOptions (it is checked first)")

  local bad = H.note('opts%.mode: "fast" is not one of the daemon\'s modes')
  H.ok(bad and bad.level == vim.log.levels.ERROR and bad.msg:find(table.concat(modes, ", "), 1, true) ~= nil,
    "a mode the daemon lacks is reported, naming its modes", bad and bad.msg)
  H.ok(bad and bad.msg:find(('using its default "%s"'):format(ann.defaultMode), 1, true) ~= nil, "and says the daemon's default is used")
  local b = ctxlayer.budget()
  H.eq(b and b.state.mode, ann.defaultMode, "the session runs in the daemon's default mode")
  H.eq(vim.fn.getcompletion("Ctxlayer mode ", "cmdline"), modes, "mode completion is the announced modes")

  H.clear_notes()
  vim.cmd("Ctxlayer mode")
  local shown = H.note("^ctxlayer: mode ")
  H.ok(shown and shown.msg:find("modes: " .. table.concat(modes, ", "), 1, true) ~= nil, ":Ctxlayer mode lists the daemon's modes", shown and shown.msg)

  -- Without a session the limit is the daemon's default budget, as announced.
  ctxlayer.stop()
  ctxlayer.setup({ cmd = H.cmd, session = false })
  vim.cmd("silent! %bwipeout!")
  vim.cmd.edit("src/app.py")
  local plain = H.wait(function()
    local f = ctxlayer.budget()
    return f and f.source == "segment" and f
  end)
  H.eq(plain and plain.limit, ann.defaultBudget, "without a session the limit is the announced default budget")

  -- no option set: sent as an object, not the `[]` of an empty Lua table, which the daemon
  -- warned of ("initializationOptions: expected an object") at every start
  ctxlayer.stop()
  ctxlayer.setup({ cmd = H.cmd, session = false, gateway = false })
  H.eq(vim.json.encode(require("ctxlayer.client").init_options()), "{}", "no option set is an empty object")
end)
