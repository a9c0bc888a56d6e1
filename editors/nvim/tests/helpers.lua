--- Helpers for the headless Neovim tests (run by tests/editors/test_nvim.py, or by hand):
---
---   CTXLAYER_TEST_ROOT=/tmp/repo CTXLAYER_TEST_DAEMON=.venv/bin/ctxlayer \
---     nvim --headless -u NONE -l editors/nvim/tests/test_statusline.lua
---
--- Puts the plugin on the runtimepath, loads plugin/ctxlayer.lua as Neovim would, records
--- notifications, and prints one `ok - ...` / `not ok - ...` line per check. `H.run(main)`
--- stops the daemon and exits with 0 only when every check passed. Waits poll with
--- vim.wait and generous timeouts; nothing here asserts on time.

local H = {}

local script = vim.fn.fnamemodify(_G.arg and _G.arg[0] or debug.getinfo(1, "S").source:sub(2), ":p")
H.plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(script)))
vim.opt.runtimepath:prepend(H.plugin_dir)
vim.cmd.runtime("plugin/ctxlayer.lua")

H.root = assert(vim.env.CTXLAYER_TEST_ROOT, "set CTXLAYER_TEST_ROOT to a git repository")
H.daemon = assert(vim.env.CTXLAYER_TEST_DAEMON, "set CTXLAYER_TEST_DAEMON to the ctxlayer executable")
H.cmd = { H.daemon, "serve" }
H.TIMEOUT = tonumber(vim.env.CTXLAYER_TEST_TIMEOUT_MS or "") or 60000

vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. "F"
vim.cmd.cd(vim.fn.fnameescape(H.root))

--- Every vim.notify call, in order: {msg, level}.
H.notes = {}
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = msg, level = level or vim.log.levels.INFO })
  io.stderr:write(("[notify %s] %s\n"):format(level or "info", msg))
end

function H.clear_notes()
  H.notes = {}
end

--- The last notification whose text matches `pattern` (a Lua pattern), or nil.
function H.note(pattern)
  for i = #H.notes, 1, -1 do
    if H.notes[i].msg:find(pattern) then
      return H.notes[i]
    end
  end
end

local passed, failed = 0, 0

function H.ok(cond, desc, detail)
  if cond then
    passed = passed + 1
    io.stdout:write("ok - " .. desc .. "\n")
  else
    failed = failed + 1
    io.stdout:write("not ok - " .. desc .. (detail and (": " .. tostring(detail)) or "") .. "\n")
  end
  return cond
end

--- Like H.ok, but stops the test: later checks would only wait out their timeouts.
function H.must(cond, desc, detail)
  if not H.ok(cond, desc, detail) then
    error("stopping: " .. desc, 0)
  end
  return cond
end

function H.eq(actual, expected, desc)
  return H.ok(vim.deep_equal(actual, expected), desc, ("expected %s, got %s"):format(vim.inspect(expected), vim.inspect(actual)))
end

--- Poll `fn` until it returns a truthy value (or the timeout passes); returns that value.
function H.wait(fn, timeout)
  local value
  vim.wait(timeout or H.TIMEOUT, function()
    value = fn()
    return value and true or false
  end, 50)
  return value
end

--- The status line text once it shows a figure such as `ctx 1.2k/128k 1%`.
H.FIGURE = "^ctx [%d.]+[kM]?/[%d.]+[kM]? %d+%%$"
-- the workspace segment alone, without a session or a chat: the daemon gives no percent
H.SEGMENT_FIGURE = "^ctx [%d.]+[kM]?/[%d.]+[kM]?$"

function H.wait_figure(different_from)
  return H.wait(function()
    local text = require("ctxlayer").statusline()
    if (text:match(H.FIGURE) or text:match(H.SEGMENT_FIGURE)) and text ~= different_from then
      return text
    end
  end)
end

function H.client()
  return H.wait(function()
    return vim.lsp.get_clients({ name = "ctxlayer" })[1]
  end)
end

--- Every ctx/budgetChanged the daemons send from now on, in order (the plugin's handler runs
--- as before): a test waits for the daemon's notification itself, not for a figure that a
--- request's answer may replace first.
function H.watch_budgets()
  local seen = {}
  local handlers = require("ctxlayer.handlers")
  local handle = handlers["ctx/budgetChanged"]
  handlers["ctx/budgetChanged"] = function(err, params, ctx)
    table.insert(seen, params)
    return handle(err, params, ctx)
  end
  return seen
end

--- Write `lines` to `path` (relative to the root) through a real buffer and :write.
function H.write_file(path, lines)
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(H.root, path)))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
  vim.cmd.write()
end

--- Lines of a buffer by name, or nil.
function H.buffer_lines(name)
  local bufnr = vim.fn.bufnr(name)
  if bufnr == -1 then
    return nil
  end
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

--- Run the test body, stop the daemon, exit with the verdict.
--- `:Ctxlayer why`, then its buffer once it shows `conversation`; and its "- action ..." lines
function H.why(conversation)
  vim.cmd("Ctxlayer why")
  local why = H.wait(function()
    local lines = H.buffer_lines("ctxlayer://why")
    return lines and lines[1]:find(conversation, 1, true) and lines
  end)
  H.must(why ~= nil, ":Ctxlayer why shows the live chat's last turn", vim.inspect(H.buffer_lines("ctxlayer://why")))
  local cuts = vim.tbl_filter(function(l)
    return l:match("^%- %a+ ") ~= nil
  end, why)
  return why, cuts
end

function H.run(main)
  local ok, err = xpcall(main, debug.traceback)
  if not ok then
    failed = failed + 1
    io.stdout:write("not ok - the test raised: " .. tostring(err) .. "\n")
  end
  pcall(function()
    require("ctxlayer").stop()
  end)
  io.stdout:write(("# passed %d, failed %d\n"):format(passed, failed))
  io.stdout:flush()
  os.exit(failed == 0 and passed > 0 and 0 or 1)
end

return H
