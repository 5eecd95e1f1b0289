#!/bin/sh
# Trunk's post-build hook (Trunk.toml): runs in every `trunk build`, on the staging directory that
# becomes dist/.
#  1. A release build of the full app also builds the embed app (`--features embed`, only the
#     /embed/… pages) into dist/embed-app/, the lean bundle an iframe loads (README, "The embed
#     bundle"). It is built inside this hook, into the staging directory, because Trunk replaces
#     dist/ as a whole when a build finishes: a second build run after this one would be wiped by
#     the next. RACELAB_EMBED_BUILD stops the embed build from starting another.
#  2. Precompresses the bundle: the server sends `*.gz` to browsers that accept gzip.
#  3. Prints the sizes, raw and gzip, that a browser downloads.
set -eu
stage=${TRUNK_STAGING_DIR:?run by trunk}
if [ "${TRUNK_PROFILE:-}" = release ] && [ -z "${RACELAB_EMBED_BUILD:-}" ]; then
  RACELAB_EMBED_BUILD=1 trunk build app/embed.html --release=true \
    --dist "$stage/embed-app" --public-url /embed-app/ >&2
fi
find "$stage" -maxdepth 1 -type f \( -name '*.wasm' -o -name '*.js' -o -name '*.css' \) \
  -exec gzip -9 -k -f {} +
bytes() { cat "$@" | wc -c | tr -d ' '; }
name=${RACELAB_EMBED_BUILD:+embed app}
echo "racelab bundle (${name:-full app}): wasm $(bytes "$stage"/*.wasm) bytes, $(bytes "$stage"/*.wasm.gz) gzip;" \
  "JS $(bytes "$stage"/*.js) bytes, $(bytes "$stage"/*.js.gz) gzip;" \
  "wasm + JS $(bytes "$stage"/*.wasm.gz "$stage"/*.js.gz) gzip" >&2
