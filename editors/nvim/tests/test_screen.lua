-- A real interactive Neovim (in a :terminal, so it draws a screen) with the status line set up
-- as the README shows: the figure appears on screen, and moves after :write. The screen's text
-- is written to $CTXLAYER_TEST_SCREEN when set (tests/editors/test_nvim.py renders it as the
-- README's picture).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local function screen(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

local function find(lines, pattern)
  for _, line in ipairs(lines) do
    local hit = line:match(pattern)
    if hit then
      return hit
    end
  end
end

H.run(function()
  local init = vim.fn.tempname() .. ".lua"
  vim.fn.writefile({
    ("vim.opt.runtimepath:prepend(%q)"):format(H.plugin_dir),
    "vim.o.swapfile = false",
    "vim.o.laststatus = 2",
    "vim.o.shortmess = vim.o.shortmess .. 'I'",
    [[vim.o.statusline = "%f %m%=%{%v:lua.require'ctxlayer'.statusline_hl()%} "]],
    ("require('ctxlayer').setup({ cmd = { %q, 'serve' }, model = 'gpt-4o' })"):format(H.daemon),
  }, init)
  vim.o.columns, vim.o.lines = 100, 20
  local term = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(term)
  local job = vim.fn.jobstart({ vim.v.progpath, "-u", init, "-i", "NONE", "src/app.py" }, { term = true, cwd = H.root })
  H.must(job > 0, "an interactive Neovim started in a terminal")

  local figure = H.wait(function()
    -- A daemon that does not know a setting says so at start (a daemon before the gateway
    -- warns about `gateway`); a long message waits for Enter, as a user would press it.
    if find(screen(term), "Press ENTER or type command to continue") then
      vim.api.nvim_chan_send(job, "\r")
    end
    return find(screen(term), "(ctx [%d.]+[kM]?/[%d.]+[kM]? %d+%%)")
  end)
  H.must(figure ~= nil, "its status line shows the figure", table.concat(screen(term), "\n"))
  H.ok(find(screen(term), "src/app.py") ~= nil, "the status line shows the file too")
  H.ok(find(screen(term), "ctx %S+ %d+%%[%%*]") == nil, "the percent sign is drawn once, with nothing stray after it")

  -- Type into the child like a user: add a line and :write.
  vim.api.nvim_chan_send(job, "Go# the entry point of the demo app, called by the CLI wrapper\27:w\r")
  local moved = H.wait(function()
    local now = find(screen(term), "(ctx [%d.]+[kM]?/[%d.]+[kM]? %d+%%)")
    return now and now ~= figure and now
  end)
  H.ok(moved ~= nil, "the figure on screen moves after :w", ("%s -> %s"):format(figure, tostring(find(screen(term), "(ctx %S+ %d+%%)"))))

  local screens = vim.deepcopy(screen(term))
  -- :Ctxlayer status in the child: the breakdown appears on its screen.
  vim.api.nvim_chan_send(job, ":Ctxlayer status\r")
  H.ok(H.wait(function()
    return find(screen(term), "^layers: system")
  end), ":Ctxlayer status shows the layers on screen", table.concat(screen(term), "\n"))
  if vim.env.CTXLAYER_TEST_SCREEN then
    vim.list_extend(screens, { "\f" })
    vim.list_extend(screens, screen(term))
    vim.fn.writefile(screens, vim.env.CTXLAYER_TEST_SCREEN)
  end
  vim.api.nvim_chan_send(job, "\r\27:qa!\r")
  H.ok(H.wait(function()
    return vim.fn.jobwait({ job }, 0)[1] ~= -1
  end), "the interactive Neovim quits")
end)
