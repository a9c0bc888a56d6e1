-- A daemon that cannot start, or that dies: one message of ours saying so, and `ctx !` in the
-- status line until a daemon of the workspace answers again.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function notes_matching(pattern)
  return vim.tbl_filter(function(n)
    return n.msg:find(pattern) ~= nil
  end, H.notes)
end

H.run(function()
  local ctxlayer = require("ctxlayer")

  -- opts.cmd naming no program: the plugin's not-found message, naming it, once.
  local missing = vim.fs.joinpath(vim.fs.dirname(H.root), "no-such-dir", "ctxlayer")
  ctxlayer.setup({ cmd = { missing, "serve" } })
  vim.cmd.edit("README.md")
  vim.cmd.edit("src/app.py")
  local said = notes_matching("daemon not found")
  H.eq(#said, 1, "a cmd naming no program is reported once", vim.inspect(H.notes))
  H.ok(said[1] and said[1].level == vim.log.levels.ERROR and said[1].msg:find(missing, 1, true) ~= nil
    and said[1].msg:find("opts.cmd", 1, true) ~= nil, "the message names opts.cmd and its program", said[1] and said[1].msg)
  H.eq(#notes_matching("Spawning language server"), 0, "Neovim's own spawn failure is not shown instead")
  H.eq(ctxlayer.statusline(), "ctx !", "the status line says it failed")
  H.clear_notes()
  vim.cmd("Ctxlayer status")
  local why = H.note("not running for this buffer")
  H.ok(why and why.msg:find(missing, 1, true) ~= nil, ":Ctxlayer status says why it is not running", why and why.msg)

  -- The real daemon: the failure is over once it answers.
  H.clear_notes()
  ctxlayer.setup({ cmd = H.cmd })
  vim.cmd("Ctxlayer start")
  local client = H.client()
  H.must(client ~= nil, "the daemon starts with a good cmd")
  H.must(H.wait_figure() ~= nil, "the status line shows its figure", ctxlayer.statusline())

  -- Killed (Neovim reports signal 9 with exit code 0): our message, and `ctx !`.
  local children = vim.api.nvim_get_proc_children(vim.fn.getpid())
  H.must(#children == 1, "the daemon is Neovim's one child", vim.inspect(children))
  vim.uv.kill(children[1], "sigkill")
  local died = H.wait(function()
    return H.note("^ctxlayer: the daemon exited")
  end)
  H.ok(died and died.level == vim.log.levels.WARN and died.msg:find("signal 9", 1, true) ~= nil,
    "a killed daemon is reported, with its signal", died and died.msg)
  H.ok(died and died.msg:find(":Ctxlayer restart", 1, true) ~= nil, "the message says how to start it again")
  H.eq(H.wait(function()
    return ctxlayer.statusline() == "ctx !" and ctxlayer.statusline()
  end, 5000), "ctx !", "the status line says it failed")
  local drawn = vim.api.nvim_eval_statusline(ctxlayer.statusline_hl(), {}).str
  H.eq(drawn, "ctx !", "statusline_hl() draws it too")
  H.ok(ctxlayer.lualine().cond(), "the lualine component stays visible to show it")

  -- :Ctxlayer restart: a daemon again, and its figure.
  vim.cmd("Ctxlayer restart")
  local back = H.wait_figure()
  H.ok(back ~= nil, "after :Ctxlayer restart the figure is back", ctxlayer.statusline())

  -- Ended by SIGTERM or SIGINT (`kill PID`, a shutdown): the daemon exits with code 0, and it
  -- is no less unasked than a kill.
  for _, signal in ipairs({ "sigterm", "sigint" }) do
    H.clear_notes()
    local pids = vim.api.nvim_get_proc_children(vim.fn.getpid())
    H.must(#pids == 1, "the daemon runs again before " .. signal, vim.inspect(pids))
    vim.uv.kill(pids[1], signal)
    local ended = H.wait(function()
      return H.note("^ctxlayer: the daemon exited")
    end)
    H.ok(ended and ended.level == vim.log.levels.WARN and ended.msg:find("code 0", 1, true) ~= nil,
      "a daemon ended by " .. signal .. " (code 0) is reported", ended and ended.msg)
    H.eq(H.wait(function()
      return ctxlayer.statusline() == "ctx !" and ctxlayer.statusline()
    end, 5000), "ctx !", "after " .. signal .. " the status line says it failed")
    vim.cmd("Ctxlayer restart")
    H.must(H.wait_figure() ~= nil, "after " .. signal .. " :Ctxlayer restart brings the figure back",
      ctxlayer.statusline())
  end

  -- A cmd that is no daemon and exits 0 before answering: a failure too, said once.
  H.clear_notes()
  vim.cmd("Ctxlayer stop")
  ctxlayer.setup({ cmd = { "true" } })
  vim.cmd("Ctxlayer start")
  H.eq(H.wait(function()
    return ctxlayer.statusline() == "ctx !" and ctxlayer.statusline()
  end, 10000), "ctx !", "a cmd exiting 0 at once shows `ctx !`")
  H.eq(#notes_matching("daemon exited unasked"), 1, "and says so once", vim.inspect(H.notes))
  -- gateway() starts one for the workspace and waits: it exits again, which is what it says
  local urls, why = ctxlayer.gateway({ timeout_ms = 10000 })
  H.ok(urls == nil and why and why:find("daemon exited unasked (code 0", 1, true) ~= nil,
    "gateway() says the daemon exited, and how", why)
  H.ok(why and why:find("still starting", 1, true) == nil, "not that it is still starting", why)
  ctxlayer.setup({ cmd = H.cmd })
  vim.cmd("Ctxlayer restart")
  H.must(H.wait_figure() ~= nil, "the real daemon answers again", ctxlayer.statusline())

  -- Stopped on request: no failure, nothing shown.
  H.clear_notes()
  vim.cmd("Ctxlayer stop")
  H.ok(H.wait(function()
    return #vim.lsp.get_clients({ name = "ctxlayer" }) == 0
  end), "the daemon stops")
  vim.wait(300)
  H.eq(ctxlayer.statusline(), "", "a daemon stopped on request leaves the status line empty")
  H.eq(#notes_matching("daemon exited"), 0, "and says nothing about exiting")
end)
