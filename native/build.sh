#!/usr/bin/env bash
# Builds the two native pieces of Hostplane's SQLite engine into native/build/:
#
#   better_sqlite3.node  better-sqlite3 (the version in node_modules) rebuilt from its bundled SQLite
#                        amalgamation with its own compile-time defines, minus
#                        SQLITE_OMIT_PROGRESS_CALLBACK (the guard's deadline needs the progress
#                        handler). Its documented custom build: node-gyp with force_build=1 on a
#                        copy of the package whose deps/defines.gypi is patched.
#   sqlite-guard.so      native/sqlite-guard/guard.c, compiled with gcc against the same
#                        amalgamation's sqlite3ext.h; the engine loads it into every connection.
#
# Called by `make install` (so by build, run, test). A warm run does nothing (0.1 s): two stamps in
# native/build/ hold hashes of what each piece is built from (binding: the better-sqlite3 version,
# the Node ABI, the defines dropped, RECIPE; guard: guard.c, sqlite3ext.h, RECIPE), so a
# change to guard.c recompiles the guard in a second, not SQLite. A cold build takes 1.5-3 minutes
# on 2 cores. Needs python3, make, gcc/g++ and the Node headers (npm_config_nodedir, exported by the
# Makefile; else the headers beside `node`). Any failure stops the build and says why.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/native/build"
pkg="$root/node_modules/better-sqlite3"
guard_src="$root/native/sqlite-guard/guard.c"
# Defines removed from better-sqlite3's list; everything else it sets is kept.
DROP_DEFINES=(SQLITE_OMIT_PROGRESS_CALLBACK)
# Bump when the build steps below change in a way that changes the output (it is part of the stamps).
RECIPE=1

say() { echo "native/build.sh: $*" >&2; }
die() {
  say "FAILED: $*"
  exit 1
}

[ -f "$pkg/package.json" ] || die "node_modules/better-sqlite3 is missing (run npm ci first)"
command -v node >/dev/null || die "node is not on PATH"

version=$(node -p "require('$pkg/package.json').version")
abi=$(node -p 'process.versions.modules + "-" + process.platform + "-" + process.arch')
# Two stamps, so that a change to guard.c recompiles the guard (a second) and not SQLite (minutes).
binding_key="better-sqlite3 $version node-abi $abi drop ${DROP_DEFINES[*]} recipe $RECIPE"
guard_key="guard $(sha256sum "$guard_src" | cut -c1-16) sqlite $(sha256sum "$pkg/deps/sqlite3/sqlite3ext.h" | cut -c1-16) recipe $RECIPE"
fresh() { [ -f "$out/$1.stamp" ] && [ "$(cat "$out/$1.stamp")" = "$2" ] && [ -f "$out/$3" ]; }

if fresh binding "$binding_key" better_sqlite3.node && fresh guard "$guard_key" sqlite-guard.so; then
  exit 0
fi

for tool in python3 make g++ gcc; do
  command -v "$tool" >/dev/null || die "$tool is required to build better-sqlite3 and the SQLite guard"
done
mkdir -p "$out"
started=$(date +%s)

if ! fresh binding "$binding_key" better_sqlite3.node; then
  # The Node headers: the Makefile exports npm_config_nodedir for the provided Node; otherwise the
  # installation `node` runs from (official builds and the node images ship include/node).
  nodedir=${npm_config_nodedir:-$(dirname "$(dirname "$(command -v node)")")}
  [ -f "$nodedir/include/node/node_api.h" ] ||
    die "no Node headers under $nodedir/include/node (set npm_config_nodedir)"
  # node-gyp: the one npm ships with, else one on PATH.
  gyp="$(dirname "$(dirname "$(command -v node)")")/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
  if [ ! -f "$gyp" ]; then
    gyp=$(command -v node-gyp) || die "node-gyp not found (neither in npm's bundle nor on PATH)"
  fi

  say "building better-sqlite3 $version for Node ABI $abi with the progress callback (1-3 min)"
  work="$out/work"
  rm -rf "$work"
  mkdir -p "$work"
  cp -R "$pkg/binding.gyp" "$pkg/src" "$pkg/deps" "$pkg/lib" "$pkg/package.json" "$work/"
  defines="$work/deps/defines.gypi"
  for define in "${DROP_DEFINES[@]}"; do
    grep -q "'$define'" "$defines" || die "$define is not in better-sqlite3's defines.gypi: check the build"
    sed -i "/'$define',/d" "$defines"
  done
  # node-addon-api (binding.gyp asks node for its include dir) resolves from the project.
  (
    cd "$work"
    NODE_PATH="$root/node_modules" node "$gyp" rebuild --release --force_build=1 --nodedir="$nodedir" \
      --jobs=max >"$work/node-gyp.log" 2>&1
  ) || {
    tail -40 "$work/node-gyp.log" >&2
    die "node-gyp could not build better-sqlite3 (log: $work/node-gyp.log)"
  }
  node -e '
    const Database = require(process.argv[1]);
    const db = new Database(":memory:", { nativeBinding: process.argv[2] });
    const omitted = db.prepare("SELECT 1 FROM pragma_compile_options WHERE compile_options = ?")
      .get("OMIT_PROGRESS_CALLBACK");
    if (omitted) throw new Error("the rebuilt SQLite still omits the progress callback");
    db.close();
  ' "$pkg" "$work/build/Release/better_sqlite3.node" || die "the rebuilt binding failed its smoke test"
  mv "$work/build/Release/better_sqlite3.node" "$out/better_sqlite3.node"
  rm -rf "$work"
  echo "$binding_key" >"$out/binding.stamp"
fi

if ! fresh guard "$guard_key" sqlite-guard.so; then
  gcc -O2 -fPIC -shared -Wall -Werror -I"$pkg/deps/sqlite3" "$guard_src" -o "$out/sqlite-guard.so.new" ||
    die "gcc could not compile $guard_src"
  # Smoke test: the binding takes the guard, and the guard hands out its secret once.
  node -e '
    const Database = require(process.argv[1]);
    const db = new Database(":memory:", { nativeBinding: process.argv[2] });
    db.loadExtension(process.argv[3]);
    const secret = db.prepare("SELECT _hp_guard(?) AS s").get("init").s;
    if (typeof secret !== "string" || secret.length !== 64) throw new Error("the guard did not initialise");
    db.close();
  ' "$pkg" "$out/better_sqlite3.node" "$out/sqlite-guard.so.new" || die "the guard failed its smoke test"
  mv "$out/sqlite-guard.so.new" "$out/sqlite-guard.so"
  echo "$guard_key" >"$out/guard.stamp"
fi
say "done in $(($(date +%s) - started)) s"
