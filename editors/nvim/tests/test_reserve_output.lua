--- An output reserve that leaves the model no room (reserve_output = 200,000 for gpt-4o's
--- 128,000): the daemon says at its start that it uses its default instead, yet every trim()
--- sent the option again and was refused ("reserveOutput: 200,000 tokens of output leave no
--- room"). trim() now works at the daemon's default budget, as its warning says; an output
--- reserve that fits, given by setup() again, is used as before.

local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

H.run(function()
  local ctxlayer = require("ctxlayer")
  local client = require("ctxlayer.client")
  ctxlayer.setup({ cmd = H.cmd, model = "gpt-4o", reserve_output = 200000, gateway = false })
  vim.cmd.edit("README.md")
  H.must(H.client() ~= nil, "the daemon starts")
  H.must(H.wait(function() return ctxlayer.budget() ~= nil end), "the daemon answers")
  local default = client.announcement(H.client()).defaultBudget
  H.ok(default and default < 128000, "the daemon announces gpt-4o's default budget", default)
  local messages = { { role = "user", content = "hello" } }
  for i = 1, 2 do
    local trimmed, err = ctxlayer.trim(messages)
    H.ok(trimmed and trimmed.budget == default,
      ("trim() %d fits to the daemon's default, not refused"):format(i),
      vim.inspect(trimmed and trimmed.budget or err))
  end
  local own = ctxlayer.trim(messages, { budget = 5000 })
  H.ok(own and own.budget == 5000, "trim() with its own budget", vim.inspect(own))

  -- a reserve that fits: sent with each trim, as before
  ctxlayer.setup({ cmd = H.cmd, model = "gpt-4o", reserve_output = 1000, gateway = false })
  local trimmed, err = ctxlayer.trim(messages)
  H.ok(trimmed and trimmed.budget == 128000 - 1000, "trim() takes an output reserve that fits",
    vim.inspect(trimmed and trimmed.budget or err))
end)
