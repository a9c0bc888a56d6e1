--- ctxlayer.health: `:checkhealth ctxlayer`.
---
--- Reports the Neovim version, whether the options are valid, whether the daemon is found and
--- which version it is (`ctxlayer --version`), whether a client is attached and answering,
--- the workspaces whose daemon failed (status.failed), whether its HTTP gateway runs and
--- answers, and where the logs are. It only reads; it never starts or stops the daemon.

local M = {}

local health = vim.health

local function check_version()
  local min = require("ctxlayer").MIN_NVIM
  if vim.fn.has("nvim-" .. min) == 1 then
    health.ok(("Neovim %s (>= %s)"):format(tostring(vim.version()), min))
  else
    health.error(("Neovim %s is too old"):format(tostring(vim.version())), { "ctxlayer needs Neovim >= " .. min })
  end
end

local function check_config()
  local config = require("ctxlayer.config")
  if #config.problems == 0 then
    health.ok("options are valid")
  else
    for _, p in ipairs(config.problems) do
      health.error("invalid option: " .. p, { "fix it in require('ctxlayer').setup({...}); the default is used meanwhile" })
    end
  end
  if config.current.summarize then
    health.info("ctx/summarize is answered by your summarize function")
  else
    health.info("no summarize function: the daemon summarizes without the editor's model")
  end
end

local function check_daemon()
  local client = require("ctxlayer.client")
  local root = client.root(0) or vim.fs.root(vim.fn.getcwd(), require("ctxlayer.config").current.root_markers)
  local cmd = client.resolve_cmd(root)
  if not cmd then
    local what = client.unrunnable and ("daemon command %q is not executable"):format(client.unrunnable)
    health.error(what or "daemon not found", { client.not_found() })
    return
  end
  local exe = vim.fn.exepath(cmd[1])
  if exe == "" then
    health.error(("daemon command %q is not executable"):format(cmd[1]), { client.NOT_FOUND })
    return
  end
  local ok, proc = pcall(vim.system, { exe, "--version" }, { text = true })
  local out = ok and proc:wait(15000)
  if not out or out.code ~= 0 then
    health.error(("`%s --version` failed: %s"):format(exe, out and (out.stderr or "") or tostring(proc)))
    return
  end
  health.ok(("daemon found: %s (%s)"):format(exe, vim.trim(out.stdout)))
end

--- The workspaces whose daemon failed (could not start, or ended unasked) and that no client
--- serves now: the failure message sends the user here, so it is repeated here.
local function check_failures(clients)
  local status = require("ctxlayer.status")
  local served = {}
  for _, c in ipairs(clients) do
    served[c.root_dir or ""] = true
  end
  local roots = vim.tbl_keys(status.failed)
  table.sort(roots)
  for _, root in ipairs(roots) do
    if not served[root] then
      health.error(("the daemon of %s failed: %s"):format(root, status.failed[root]),
        { "see :Ctxlayer log (the daemon's stderr); :Ctxlayer restart starts it again" })
    end
  end
  return #roots > 0
end

local function check_clients()
  local clients = vim.lsp.get_clients({ name = "ctxlayer" })
  local failed = check_failures(clients)
  if #clients == 0 then
    if not failed then
      health.warn("no ctxlayer client is running", { "open a file inside a workspace after setup(), or run :Ctxlayer start" })
    end
    return
  end
  local status = require("ctxlayer.status")
  for _, c in ipairs(clients) do
    local buffers = vim.tbl_count(c.attached_buffers)
    local state = status.get(c.id)
    local msg = ("client %d attached to %d buffer(s), root %s"):format(c.id, buffers, c.root_dir or "?")
    if require("ctxlayer.client").call(c, "is_stopped") then
      health.error(msg .. ": stopped")
    elseif state and state.segment then
      health.ok(("%s: %s"):format(msg, status.text({ bufnr = next(c.attached_buffers) })))
    elseif state and state.error then
      health.error(("%s: last request failed: %s"):format(msg, state.error))
    else
      health.warn(msg .. ": no answer from the daemon yet")
    end
    local info = c.server_info or {}
    if info.name then
      health.info(("server %s %s"):format(info.name, info.version or ""))
    end
  end
end

--- The gateway of each running daemon: its URLs, and whether it answers GET /health.
local function check_gateway()
  local clients = vim.lsp.get_clients({ name = "ctxlayer" })
  local gateway = require("ctxlayer.gateway")
  local wanted = require("ctxlayer.config").current.gateway
  if #clients == 0 then
    health.info(wanted and "the gateway starts with the daemon (setup option `gateway`)" or gateway.OFF)
    return
  end
  for _, c in ipairs(clients) do
    local announced = require("ctxlayer.client").announcement(c).gateway
    if type(announced) == "table" and announced.openai then
      local ok, detail = gateway.probe(announced)
      local msg = ("client %d gateway: openai %s, anthropic %s"):format(c.id, announced.openai, announced.anthropic)
      if ok then
        health.ok(("%s (%s)"):format(msg, detail))
      else
        health.error(("%s: %s"):format(msg, detail), { "see :Ctxlayer log; :Ctxlayer restart starts it again" })
      end
    elseif wanted then
      health.warn(("client %d: %s"):format(c.id, gateway.NOT_STARTED))
    else
      health.info(("client %d: %s"):format(c.id, gateway.OFF))
    end
  end
end

local function check_logs()
  local paths = require("ctxlayer.client").log_paths()
  health.info("Neovim LSP log (the daemon's stderr): " .. paths.lsp)
  health.info("daemon state directory: " .. paths.state_dir)
end

function M.check()
  health.start("ctxlayer: Neovim")
  check_version()
  health.start("ctxlayer: options")
  check_config()
  health.start("ctxlayer: daemon")
  check_daemon()
  health.start("ctxlayer: clients")
  check_clients()
  health.start("ctxlayer: gateway")
  check_gateway()
  health.start("ctxlayer: logs")
  check_logs()
end

return M
