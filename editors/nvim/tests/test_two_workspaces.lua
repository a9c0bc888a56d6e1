-- Two workspaces open at once, each with its daemon: a scratch view such as ctxlayer://chats
-- belongs to the workspace it was made for, so its status line and a command typed in it go
-- to that workspace's session. Before, every buffer of no file belonged to every workspace and
-- the newest client won: from repo 1, :Ctxlayer chats showed repo 2's figure, and
-- :Ctxlayer rule typed there added the rule to repo 2's session.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(vim.fn.fnamemodify(arg[0], ":p")), "helpers.lua"))

local client = require("ctxlayer.client")

--- The client of a workspace root (normalized real path), or nil.
local function client_of(root)
  for _, c in ipairs(vim.lsp.get_clients({ name = client.NAME })) do
    if vim.fs.normalize(c.root_dir) == root then
      return c
    end
  end
end

--- The tokens of the rules layer of a workspace's session, as its daemon measures it.
local function rule_tokens(root)
  local c = client_of(root)
  local b = c and client.request_sync(c, "ctx/session/budget", { sessionId = client.session_id(c.root_dir) })
  return b and b.byLayer.rules
end

H.run(function()
  local ctxlayer = require("ctxlayer")
  local root1 = vim.fs.normalize(vim.uv.fs_realpath(H.root))
  local root2 = vim.fs.joinpath(vim.fs.dirname(root1), "repo2")
  vim.fn.mkdir(vim.fs.joinpath(root2, "lib"), "p")
  vim.fn.writefile({ "x = 1" }, vim.fs.joinpath(root2, "lib", "m.py"))
  vim.fn.system({ "git", "-C", root2, "init", "-q" })

  ctxlayer.setup({ cmd = H.cmd, gateway = true })
  vim.cmd.edit("README.md")
  local readme = vim.api.nvim_get_current_buf()
  H.must(H.wait_figure() ~= nil, "repo 1's daemon answers")
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(root2, "lib", "m.py")))
  local module = vim.api.nvim_get_current_buf()
  H.must(H.wait(function()
    return client_of(root2) and ctxlayer.statusline({ bufnr = module }):match("^ctx %d")
  end) ~= nil, "repo 2's daemon answers too")
  -- the daemons' clients ids: repo 2's is the newer, the one that used to win
  H.must(client_of(root2).id > client_of(root1).id, "repo 2's client is the newer")
  local rules2 = rule_tokens(root2)

  -- from repo 1, :Ctxlayer chats: the view is repo 1's
  vim.cmd.buffer(readme)
  local figure1 = H.wait(function()
    return ctxlayer.budget() and ctxlayer.statusline()
  end)
  vim.cmd("Ctxlayer chats")
  local chats = H.wait(function()
    local b = vim.fn.bufnr("ctxlayer://chats")
    return b ~= -1 and b
  end)
  H.must(chats and vim.api.nvim_get_current_buf() == chats, "the chats view opens and has the cursor")
  H.eq(vim.fs.normalize(ctxlayer.client().root_dir), root1, "the view's client is repo 1's")
  H.eq(ctxlayer.statusline(), figure1, "its status line shows repo 1's figure")

  H.clear_notes()
  vim.cmd("Ctxlayer rule Use tabs in the first project")
  H.ok(H.wait(function()
    return H.note("^ctxlayer: rule .* added")
  end), "a rule typed in the view is added", vim.inspect(H.notes))
  H.ok(H.wait(function()
    return (rule_tokens(root1) or 0) > 0
  end), "to repo 1's session", rule_tokens(root1))
  H.eq(rule_tokens(root2), rules2, "not to repo 2's")

  -- the same view made from repo 2 is repo 2's
  vim.cmd.wincmd("p")
  vim.cmd.buffer(module)
  vim.cmd("Ctxlayer chats")
  H.must(H.wait(function()
    local c = ctxlayer.client(chats)
    return c and vim.fs.normalize(c.root_dir) == root2
  end), "made again from repo 2, the view is repo 2's", ctxlayer.client(chats).root_dir)
  H.eq(ctxlayer.statusline({ bufnr = chats }), ctxlayer.statusline({ bufnr = module }),
    "and shows repo 2's figure")

  -- another buffer of no file follows Neovim's current directory; outside both, it has none
  vim.cmd.enew()
  H.eq(vim.fs.normalize(ctxlayer.client().root_dir), root1, "a new buffer, cwd in repo 1: repo 1's")
  vim.cmd.cd(vim.fn.fnameescape(root2))
  H.eq(vim.fs.normalize(ctxlayer.client().root_dir), root2, "cwd in repo 2: repo 2's")
  vim.cmd.cd(vim.fn.fnameescape(vim.fs.dirname(root1)))
  H.eq(ctxlayer.client(), nil, "cwd in neither: no workspace's")
  H.eq(ctxlayer.statusline(), "", "and no figure passes for its own")

  -- A chat plugin's buffer there (CodeCompanion's is buftype=nofile) asks for the gateway: it
  -- gets the daemon of the workspace last entered. Before, a third daemon was started on the
  -- cwd, a folder that is no project (often $HOME), and its chats showed in no status line.
  local function gateway_of(root)
    local urls = client.announcement(client_of(root)).gateway
    return { openai = urls.openai, anthropic = urls.anthropic }
  end
  local chat = vim.api.nvim_create_buf(true, true)
  vim.bo[chat].filetype = "codecompanion"
  vim.cmd.buffer(readme)
  vim.cmd.buffer(chat)
  local urls, err = ctxlayer.gateway()
  H.eq(#vim.lsp.get_clients({ name = client.NAME }), 2, "the chat buffer's gateway() starts no third daemon")
  H.eq(urls, gateway_of(root1), "it is repo 1's, the workspace last entered " .. tostring(err))
  vim.cmd.buffer(module)
  vim.cmd.buffer(chat)
  H.eq(ctxlayer.gateway(), gateway_of(root2), "after entering repo 2's file, repo 2's")

  -- Its status line shows the figure of that same daemon, the one its requests go to: a chat
  -- through repo 1's daemon shows there once repo 1 was entered last. Before, a chat plugin's
  -- buffer with the cwd in neither workspace showed nothing ("") whatever went through.
  local prepared = client.request_sync(client_of(root1), "ctx/prepare", { format = "openai",
    request = { model = "gpt-4o", messages = { { role = "user", content = "hi" .. string.rep(" words", 300) } } } })
  H.must(prepared and prepared.conversationId, "a chat goes through repo 1's daemon", vim.inspect(prepared))
  vim.cmd.buffer(readme)
  local chat1 = H.wait(function()
    local text = ctxlayer.statusline()
    return text:match("^ctx chat ") and text
  end)
  H.must(chat1 ~= nil, "repo 1's file shows that chat", ctxlayer.statusline())
  vim.cmd.buffer(chat)
  H.eq(ctxlayer.statusline(), chat1, "the chat buffer shows it too, repo 1 entered last")
  H.eq(ctxlayer.budget() and ctxlayer.budget().conversation, prepared.conversationId,
    "budget() in the chat buffer is that chat's")
  vim.cmd.buffer(module)
  local figure2 = ctxlayer.statusline()
  vim.cmd.buffer(chat)
  H.ok(figure2 ~= "" and ctxlayer.statusline() == figure2,
    "after entering repo 2's file, repo 2's figure, as gateway() gives repo 2's", ctxlayer.statusline())
  vim.bo[chat].filetype = "help"
  H.eq(ctxlayer.statusline(), "", "a buffer of no chat plugin there still shows none")
end)
