--- ctxlayer.gateway: the HTTP gateway of the workspace's daemon, as chat plugins need it.
---
--- Owns finding the gateway's URLs (the daemon announces them in its initialize result, at
--- `capabilities.experimental.ctxlayer.gateway`), starting the daemon when none runs yet,
--- the message that says how to turn the gateway on, and `:Ctxlayer gateway` (show and copy).
--- It never talks HTTP itself except the health probe of :checkhealth.

local client = require("ctxlayer.client")
local config = require("ctxlayer.config")
local status = require("ctxlayer.status")

local M = {}

M.OFF = "ctxlayer: the gateway is off. Turn it on with require('ctxlayer').setup({ gateway = true }) "
  .. "(or `[gateway] enabled = true` in the workspace's ctxlayer.toml), then :Ctxlayer restart"

M.NOT_STARTED = "ctxlayer: the daemon did not start its gateway (it failed to listen: see :Ctxlayer log)"

local function announced(c)
  local urls = client.announcement(c).gateway
  if type(urls) == "table" and type(urls.openai) == "string" and type(urls.anthropic) == "string" then
    return { openai = urls.openai, anthropic = urls.anthropic }
  end
end

--- The daemon a buffer of no workspace uses (a chat plugin's, with Neovim's directory in none
--- of those open): the one of the buffer last entered (status.last_root), else the newest
--- running; nil when none runs. Before, one was started on the directory: a folder that is no
--- project (often $HOME) was scanned, and its chats showed in no workspace's status line.
local function in_use()
  return status.in_use(vim.tbl_filter(function(c)
    return c.root_dir ~= nil and not client.call(c, "is_stopped")
  end, vim.lsp.get_clients({ name = client.NAME })))
end

--- The workspace's running client, else one started for the buffer's workspace or the cwd's
--- (not attached to any buffer); with neither a workspace, the daemon in use, and only when
--- none runs one started on the cwd (`start` false: none started). Waited for up to
--- timeout_ms unless we are in a callback that cannot wait.
local function find_or_start(timeout_ms, start)
  local own = client.root(0) or vim.fs.root(vim.fn.getcwd(), config.current.root_markers)
  local c = client.get() or (not own and in_use()) or nil
  if not c and start ~= false then
    local root = own or vim.fn.getcwd()
    local id = client.start(vim.api.nvim_get_current_buf(), { root = root, attach = false })
    c = id and vim.lsp.get_client_by_id(id)
  end
  if c and start ~= false and not c.initialized and not vim.in_fast_event() then
    vim.wait(timeout_ms or config.current.timeout_ms, function()
      return c.initialized or client.call(c, "is_stopped")
    end, 20)
  end
  return c
end

--- The gateway's base URLs `{ openai = ".../v1", anthropic = "..." }`, or nil and a message
--- saying why and what to do. Starts the daemon when none runs (blocking up to timeout_ms).
---@param opts? {timeout_ms?: integer, start?: boolean}
---@return {openai: string, anthropic: string}|nil urls
---@return string|nil message
function M.urls(opts)
  opts = opts or {}
  local c = find_or_start(opts.timeout_ms, opts.start)
  if not c then
    return nil, "ctxlayer: no daemon runs for this workspace and none could start (see :checkhealth ctxlayer)"
  end
  if client.call(c, "is_stopped") then
    -- it ended while we waited (or before): why, when it ended unasked; never "starting"
    return nil, require("ctxlayer.status").failed[c.root_dir or ""]
      or "ctxlayer: the daemon exited before it answered; see :Ctxlayer log"
  end
  if not c.initialized then
    return nil, "ctxlayer: the daemon is still starting; try again in a moment"
  end
  local urls = announced(c)
  if urls then
    return urls
  end
  if not config.current.gateway then
    return nil, M.OFF
  end
  return nil, M.NOT_STARTED
end

--- The register a copy goes to: the system clipboard when Neovim has one, else the unnamed.
function M.register()
  return vim.fn.has("clipboard") == 1 and "+" or '"'
end

--- `:Ctxlayer gateway [openai|anthropic]`: show the URLs and copy them (or the one named).
function M.command(args)
  local which = args[1]
  if which and which ~= "openai" and which ~= "anthropic" then
    vim.notify(("ctxlayer: gateway: expected openai or anthropic, got %q"):format(which), vim.log.levels.ERROR)
    return
  end
  local urls, err = M.urls()
  if not urls then
    vim.notify(err, vim.log.levels.ERROR)
    return
  end
  local copied = which and { urls[which] } or { urls.openai, urls.anthropic }
  local reg = M.register()
  vim.fn.setreg(reg, copied, "l")
  vim.notify(("ctxlayer gateway\nopenai:    %s\nanthropic: %s\ncopied %s to register %s"):format(
    urls.openai, urls.anthropic, which or "both", reg
  ), vim.log.levels.INFO)
end

--- The gateway's root (where /health lives): the Anthropic base URL is the root.
function M.root(urls)
  return (urls.anthropic:gsub("/+$", ""))
end

--- GET /health with curl, as a chat plugin would reach it: ok, detail.
function M.probe(urls, timeout_ms)
  if vim.fn.executable("curl") ~= 1 then
    return nil, "curl not found, the gateway was not probed"
  end
  local ok, proc = pcall(vim.system, { "curl", "-sS", "-m", "5", "-w", "\n%{http_code}", M.root(urls) .. "/health" }, { text = true })
  if not ok then
    return nil, tostring(proc)
  end
  local out = proc:wait(timeout_ms or 10000)
  local code = out.stdout and out.stdout:match("(%d+)%s*$")
  if out.code == 0 and code == "200" then
    return true, "GET /health answered 200"
  end
  return nil, ("GET %s/health: %s"):format(M.root(urls), out.code ~= 0 and vim.trim(out.stderr or "") or ("HTTP " .. tostring(code)))
end

return M
