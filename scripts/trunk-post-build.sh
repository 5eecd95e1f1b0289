#!/bin/sh
# Trunk's post-build hook (Trunk.toml): runs in every `trunk build`, on the staging directory that
# becomes dist/.
#  1. A release build of the full app also builds the embed app (`--features embed`, only the
#     /embed/… pages) into dist/embed-app/, the lean bundle an iframe loads (docs/embedding.md, "The
#     embed bundle"), and the player app (`--features player`, only a recording's page) into
#     dist/player-app/, what plays recordings (docs/embedding.md, "The player bundle"). They are
#     built inside this hook, into the staging directory, because Trunk replaces dist/ as a whole
#     when a build finishes: a second build run after this one would be wiped by the next.
#     RACELAB_EMBED_BUILD stops those builds from starting others.
#  2. Minifies wasm-bindgen's JS glue with terser, when install-ui-tools.sh put it in .tools/
#     (Trunk's own --minify cannot parse the glue), and puts the file's new SRI hash in the page
#     that loads it.
#  3. Strips the stylesheets' comments and runs of whitespace (they are half comments: the
#     player's 70 KB of CSS is 16 KB gzip as written, 8 KB so), and puts each file's new SRI
#     hash in the page. Nothing else changes: our CSS has no comment marks or runs of spaces
#     inside its strings.
#  4. Precompresses the bundle: the server sends `*.gz` to browsers that accept gzip. zopfli
#     writes the same gzip format as gzip, 4-5 % smaller for our wasm; without it, gzip -9.
#  5. Prints the sizes, raw and gzip, that a browser downloads.
set -eu
stage=${TRUNK_STAGING_DIR:?run by trunk}
if [ "${TRUNK_PROFILE:-}" = release ] && [ -z "${RACELAB_EMBED_BUILD:-}" ]; then
  RACELAB_EMBED_BUILD="embed app" trunk build app/embed.html --release=true \
    --dist "$stage/embed-app" --public-url /embed-app/ >&2
  RACELAB_EMBED_BUILD="player app" trunk build app/player.html --release=true \
    --dist "$stage/player-app" --public-url /player-app/ >&2
fi

sri() { openssl dgst -sha384 -binary "$1" | openssl base64 -A; }
# `minified FILE HOW`: FILE replaced by what HOW writes from it, and its new SRI hash put in the
# page that loads it.
minified() {
  before=$(sri "$1")
  "$2" "$1" >"$1.min"
  mv "$1.min" "$1"
  sed -i "s|sha384-$before|sha384-$(sri "$1")|g" "$stage/index.html"
}
terser=${TOOLS:-$PWD/.tools}/node_modules/.bin/terser
js() { "$terser" "$1" --module --compress --mangle; }
css() { perl -0777 -pe 's{/\*.*?\*/}{}gs; s/\s+/ /g; s/ ?([{};]) ?/$1/g' "$1"; }
if [ "${TRUNK_PROFILE:-}" = release ] && command -v openssl >/dev/null; then
  if [ -x "$terser" ]; then
    for file in "$stage"/*.js; do minified "$file" js; done
  fi
  for file in "$stage"/*.css; do
    [ -e "$file" ] || continue
    minified "$file" css
  done
fi

for file in $(find "$stage" -maxdepth 1 -type f \( -name '*.wasm' -o -name '*.js' -o -name '*.css' \)); do
  if command -v zopfli >/dev/null; then
    zopfli -c "$file" >"$file.gz"
  else
    gzip -9 -k -f "$file"
  fi
done
bytes() { cat "$@" | wc -c | tr -d ' '; }
echo "racelab bundle (${RACELAB_EMBED_BUILD:-full app}): wasm $(bytes "$stage"/*.wasm) bytes, $(bytes "$stage"/*.wasm.gz) gzip;" \
  "JS $(bytes "$stage"/*.js) bytes, $(bytes "$stage"/*.js.gz) gzip;" \
  "wasm + JS $(bytes "$stage"/*.wasm.gz "$stage"/*.js.gz) gzip" >&2
