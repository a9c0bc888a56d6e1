--- ctxlayer.chats: the live chats, those whose requests go through the daemon (its HTTP
--- gateway or ctx/prepare), as the status line, `:Ctxlayer chats` and `:Ctxlayer why` see them.
---
--- Owns what a chat's ctx/budgetChanged does (the daemon marks the live chat's, which becomes
--- the status line's), the compaction notice (the daemon's own line, sent with the budget of
--- the request that compacted), and the lines of the chats and why views.
--- It never counts anything itself and keeps its state in status.lua's per-client table.

local status = require("ctxlayer.status")

local M = {}

--- The key of a live chat: its conversation, else (an assembled session) its session.
function M.key(budget)
  local cid = budget.conversationId
  return (cid ~= nil and cid ~= vim.NIL) and cid or budget.sessionId
end

--- ctx/budgetChanged of a chat that is not the live one: kept for `:Ctxlayer chats`.
function M.remember(client_id, budget)
  local state = status.get(client_id)
  if state then
    local chats = state.chats or {}
    chats[M.key(budget)] = budget
    status.update(client_id, { chats = chats })
  end
end

--- Whether a live budget leaves the chat a `:Ctxlayer chats {id}` picked in the status line:
--- an assembled session's (no conversation) other than the picked one. That is a re-measure
--- of the daemon's live chat after a :write (the help promises a changed file "re-measures it
--- without switching chats"), or another editor's assembly (VS Code's prompt or @ctxlayer
--- chat, a session of another client on the daemon): no chat of this Neovim, whose chat
--- plugins send through the gateway or ctx/prepare, and a pick undone by work in a window the
--- user is not looking at is a status line that switches by itself. Before, only re-measures
--- of the session the pick replaced were held. A conversation's request takes over.
local function keeps_pick(state, budget)
  local cid = budget.conversationId
  return state.picked ~= nil and (cid == nil or cid == vim.NIL) and M.key(budget) ~= state.picked.key
end

--- ctx/budgetChanged of the live chat: it is the status line's chat (unless it leaves a
--- pick there, keeps_pick); when its request summarized or cut something, the daemon's
--- notice is shown once (a re-measure of the chat carries no notice).
function M.on_budget(client_id, budget)
  local state = status.get(client_id)
  if not state then
    return
  end
  local chats = state.chats or {}
  chats[M.key(budget)] = budget
  if keeps_pick(state, budget) then
    return status.update(client_id, { chats = chats })
  end
  if state.picked and M.key(budget) ~= state.picked.key then
    state.picked = nil -- another chat sent a request: the status line follows it again
  end
  status.update(client_id, { chat = budget, chats = chats })
  local notice = budget.notice ~= vim.NIL and budget.notice or nil
  if notice and require("ctxlayer.config").current.notify_compaction then
    vim.notify(notice, vim.log.levels.INFO)
  end
end

--- The daemon's warning beside a chat's request (its state folder failed: the request went
--- all the same), with the budget of any chat, live or not: shown once per text (every turn
--- of a failing state folder says it again).
function M.warn(client_id, budget)
  local warning = budget.warning ~= vim.NIL and budget.warning or nil
  local state = status.get(client_id)
  if not warning or not state then
    return
  end
  local warned = state.warned or {}
  if warned[warning] then
    return
  end
  warned[warning] = true
  status.update(client_id, { warned = warned })
  vim.notify("ctxlayer: " .. warning, vim.log.levels.WARN)
end

--- A ConversationInfo of ctx/conversations as the Budget-like figure the status line shows.
local function as_budget(info)
  local limit = info.budget or 0
  return {
    conversationId = info.conversationId,
    sessionId = info.sessionId,
    used = info.tokens,
    limit = limit,
    percent = info.percent or 0, -- the daemon's figure: the plugin computes none
    model = info.model,
    source = info.source,
    cachedTokens = info.cachedTokens,
  }
end

--- The live chat when it is an assembled session's (no conversation: ctx/conversations does
--- not list it), else nil.
function M.session_chat(state)
  local chat = state.chat
  local cid = chat and chat.conversationId
  if chat and (cid == nil or cid == vim.NIL) and type(chat.sessionId) == "string" then
    return chat
  end
end

--- Lines of `:Ctxlayer chats`: one per live conversation, and the assembled session when it is
--- the live chat; the status line's one marked `*`.
--- `warning`: ctx/conversations could not read the chats the state folder keeps, so the count
--- is of those it listed, and the lines say why the others are missing.
function M.lines(state, conversations, warning)
  local live = state.chat and state.chat.conversationId
  local session = M.session_chat(state)
  local count = #conversations + (session and 1 or 0)
  local plural = count == 1 and "" or "s"
  local lines = { ("%d live chat%s (* = in the status line)"):format(count, plural) }
  if warning then
    lines[1] = ("%d live chat%s listed, not the kept ones (* = in the status line)"):format(
      count, plural)
    table.insert(lines, 2, "ctxlayer: " .. warning)
  end
  for _, info in ipairs(conversations) do
    local cached = info.cachedTokens ~= vim.NIL and info.cachedTokens or nil
    table.insert(lines, ("%s %s  %s via %s: %s/%s tokens, %d dropped%s, cache reuse %s, updated %s"):format(
      info.conversationId == live and "*" or " ",
      info.conversationId, info.model, info.source,
      status.human(info.tokens), status.human(info.budget), info.dropped or 0,
      cached and (", " .. status.human(cached) .. " cached") or "",
      status.human(info.cacheReuseTokens or 0), info.updatedAt or "?"
    ))
  end
  if session then
    table.insert(lines, ("* %s  %s via assembled session: %s/%s tokens"):format(
      session.sessionId, tostring(session.model ~= vim.NIL and session.model or "?"),
      status.human(session.used or 0), status.human(session.limit or 0)))
  end
  return lines
end

--- Whether the daemon still has the session of a session-only live chat (ctx/session/list);
--- `keep(true|false)`. Unsure (the request failed) keeps it: a chat is forgotten only when the
--- daemon says it is gone.
local function session_kept(c, chat, keep)
  if not chat then
    return keep(false)
  end
  require("ctxlayer.client").request(c, "ctx/session/list", {}, function(result)
    for _, info in ipairs(result.sessions or {}) do
      if info.sessionId == chat.sessionId then
        return keep(true)
      end
    end
    keep(false)
  end, function()
    keep(true)
  end)
end

--- Ask ctx/conversations; forget chats the daemon no longer has (the status line then falls
--- back to the workspace figure); `pick` makes that conversation the live one (or the live
--- assembled session, by its session id). `done(conversations, err, warning)`: `warning`, the
--- daemon's, when it could not read the chats it keeps (only the live ones are listed).
function M.list(c, pick, done)
  local client = require("ctxlayer.client")
  client.request(c, "ctx/conversations", {}, function(result)
    local state = status.get(c.id)
    if not state then
      return
    end
    local conversations = result.conversations or {}
    local warning = result.warning ~= vim.NIL and result.warning or nil
    -- With a warning the kept chats went unread, not away: they stay until a full answer
    local chats, live = warning and vim.deepcopy(state.chats or {}) or {}, nil
    for _, info in ipairs(conversations) do
      chats[info.conversationId] = (state.chats or {})[info.conversationId] or as_budget(info)
      if pick and info.conversationId == pick then
        live = as_budget(info)
      end
    end
    -- An assembled session's chat is no conversation: it is kept while its session is.
    local asked = M.session_chat(state)
    session_kept(c, asked, function(kept)
      local session = kept and asked or nil
      if session then
        chats[session.sessionId] = session
      end
      local current = state.chat and chats[M.key(state.chat)] and state.chat or nil
      if pick and not live and not (session and session.sessionId == pick) then
        done(nil, ("no live chat %q (:Ctxlayer chats lists them)"):format(pick))
        return
      end
      -- Set directly: a nil field would not go through update's table.
      state.chat = live or current
      if pick then
        -- held even when it is the daemon's live chat already: an assembly elsewhere would
        -- take the status line from it (keeps_pick)
        state.picked = { key = pick }
      end
      status.update(c.id, { chats = chats })
      done(conversations, nil, warning)
    end)
  end, function(err)
    done(nil, "ctx/conversations: " .. (err.message or vim.inspect(err)))
  end)
end

--- Lines of `:Ctxlayer why`: each cut of the last turn (or of one message), and its reason.
function M.why_lines(what, entries)
  local lines = { ("What was cut from the last turn of %s, and why:"):format(what) }
  if #entries == 0 then
    table.insert(lines, "nothing: every message went to the model whole")
  end
  for _, e in ipairs(entries) do
    local id = e.messageId ~= vim.NIL and e.messageId or nil
    local index = e.index ~= vim.NIL and e.index or nil
    table.insert(lines, ("- %s %s%s: %s (%s → %s tokens): %s"):format(
      e.action,
      index and ("#" .. index) or "",
      id and (" " .. id) or "",
      e.summary or "", tostring(e.tokensBefore or 0), tostring(e.tokensAfter or 0), e.reason or ""
    ))
  end
  return lines
end

--- The daemon answered that the live chat's session is gone (-32002: closed by
--- ctx/session/close, by any client; no notification says so): the live chat is forgotten and
--- the status line goes back to the workspace's figures. True when it was so.
function M.forget_gone(c, err)
  local state = status.get(c.id)
  if not (state and state.chat and type(err) == "table" and err.code == -32002) then
    return false
  end
  if state.chats then
    state.chats[M.key(state.chat)] = nil
  end
  state.chat, state.picked = nil, nil -- set directly: a nil would not go through update
  status.update(c.id, {})
  return true
end

--- The params of ctx/why for the live chat, else the workspace's session: params, label.
function M.why_target(state)
  local chat = state.chat
  if chat and chat.conversationId and chat.conversationId ~= vim.NIL then
    return { conversationId = chat.conversationId }, "chat " .. chat.conversationId
  elseif chat and chat.sessionId then
    return { sessionId = chat.sessionId }, "chat " .. chat.sessionId
  end
  if state.session_id then
    return { sessionId = state.session_id }, "session " .. state.session_id
  end
end

return M
