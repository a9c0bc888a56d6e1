-- A workspace's own .venv/bin/ctxlayer is the repository's program: opening a file of a project
-- cloned from anyone ran whatever it shipped there. It runs only once the user trusts it, as
-- Neovim asks of an exrc file (vim.secure), and the not-found message says so.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local client = require("ctxlayer.client")
  local root = vim.fn.tempname()
  local bin = vim.fs.joinpath(root, ".venv", "bin")
  vim.fn.mkdir(bin, "p")
  vim.fn.mkdir(vim.fs.joinpath(root, ".git"), "p")
  local marker = vim.fs.joinpath(root, "ran")
  local script = vim.fs.joinpath(bin, "ctxlayer")
  vim.fn.writefile({ "#!/bin/sh", "touch " .. vim.fn.shellescape(marker), "exit 1" }, script)
  vim.fn.setfperm(script, "rwxr-xr-x")

  -- the user is asked, and leaves it unanswered (ignore): not run, said in the message
  local asked = {}
  vim.fn.confirm = function(msg)
    table.insert(asked, msg)
    return 1
  end
  require("ctxlayer").setup({ autostart = false })
  local cmd = client.resolve_cmd(root)
  H.ok(cmd == nil or cmd[1] ~= script, "the workspace's program is not the daemon command", vim.inspect(cmd))
  H.ok(#asked == 1 and asked[1]:find("is not trusted", 1, true) ~= nil, "Neovim asked whether to trust it", vim.inspect(asked))
  H.ok(client.not_found():find(script, 1, true) ~= nil and client.not_found():find("`:trust`", 1, true) ~= nil,
    "the not-found message names it and says how to trust it", client.not_found())
  H.ok(vim.fn.filereadable(marker) == 0, "it never ran")

  -- allowed at the prompt: it is the command, and nobody is asked again
  asked = {}
  vim.fn.confirm = function(msg)
    table.insert(asked, msg)
    return 4 -- &ignore, &view, &deny, &allow
  end
  cmd = client.resolve_cmd(root)
  H.ok(cmd ~= nil and cmd[1] == script and cmd[2] == "serve", "a program the user allowed is the command", vim.inspect(cmd))
  cmd = client.resolve_cmd(root)
  H.ok(#asked == 1 and cmd ~= nil and cmd[1] == script, "an allowed program is not asked about again", vim.inspect(asked))
  H.ok(client.not_found():find(script, 1, true) == nil, "the message no longer names it once trusted")

  -- changed after it was trusted: asked again (vim.secure keeps the content's hash)
  asked = {}
  vim.fn.confirm = function(msg)
    table.insert(asked, msg)
    return 1
  end
  vim.fn.writefile({ "#!/bin/sh", "echo changed", "exit 1" }, script)
  cmd = client.resolve_cmd(root)
  H.ok(#asked == 1 and (cmd == nil or cmd[1] ~= script), "a changed program is asked about again", vim.inspect(cmd))
  H.ok(vim.fn.filereadable(marker) == 0, "it still never ran")
end)
