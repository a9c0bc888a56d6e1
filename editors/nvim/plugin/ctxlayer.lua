-- ctxlayer: load guard and the :Ctxlayer user command. Everything else loads on demand
-- (require("ctxlayer").setup() starts the daemon; see :help ctxlayer).
if vim.g.loaded_ctxlayer then
  return
end
vim.g.loaded_ctxlayer = true

vim.api.nvim_create_user_command("Ctxlayer", function(cmd)
  require("ctxlayer.commands").run(cmd)
end, {
  nargs = "*",
  desc = "ctxlayer: status, chats, why, gateway, mode, rule, refresh, inspect, assemble, start, stop, restart, log",
  complete = function(arglead, cmdline)
    return require("ctxlayer.commands").complete(arglead, cmdline)
  end,
})
