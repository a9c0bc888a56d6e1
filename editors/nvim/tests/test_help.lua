-- `:help ctxlayer` with the plugin folder put on the runtimepath by hand (as the README says,
-- or a plugin manager that makes no tags): E149, since no doc/tags was shipped. The tags are
-- shipped now, and must be what :helptags makes of doc/ctxlayer.txt (regenerate with
-- `:helptags editors/nvim/doc` after editing it).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function read(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

H.run(function()
  local doc = vim.fs.joinpath(H.plugin_dir, "doc")
  local shipped = read(vim.fs.joinpath(doc, "tags"))
  H.must(shipped ~= nil, "doc/tags is shipped beside doc/ctxlayer.txt")

  -- what :helptags makes of the help file, in a copy (the checkout stays as it is)
  local copy = vim.fn.tempname()
  vim.fn.mkdir(copy, "p")
  vim.fn.writefile(vim.fn.readfile(vim.fs.joinpath(doc, "ctxlayer.txt"), "b"),
    vim.fs.joinpath(copy, "ctxlayer.txt"), "b")
  vim.cmd.helptags(vim.fn.fnameescape(copy))
  H.eq(shipped, read(vim.fs.joinpath(copy, "tags")),
    "doc/tags is current (:helptags editors/nvim/doc regenerates it)")

  -- the plugin folder is on the runtimepath (helpers.lua puts it there, as a user would)
  for _, topic in ipairs({ "ctxlayer", "ctxlayer-setup", "ctxlayer-statusline", ":Ctxlayer",
    "ctxlayer.statusline()" }) do
    local ok, err = pcall(vim.cmd.help, topic)
    local shown = ok and vim.fn.expand("%:t") or nil
    H.ok(ok and shown == "ctxlayer.txt", ":help " .. topic .. " opens ctxlayer.txt",
      tostring(err or shown))
    if ok then
      vim.cmd.close()
    end
  end
end)
