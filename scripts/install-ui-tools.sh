#!/usr/bin/env bash
# Installs what building and browser-testing the app needs, from the package registries only
# (versions verified in TOOLCHAIN.md). Idempotent: skips what is already there.
#   - the wasm32 target, trunk 0.21.14, wasm-bindgen-cli = the wasm-bindgen version in Cargo.lock
#   - wasm-opt from the npm package binaryen@132 (never Debian's 108: its output fails in browsers),
#     terser (npm) for the JS glue, axe-core (npm) for the accessibility tests, and zopfli
#     (Debian) for the .gz files the server sends
#   - Chromium and chromedriver from Debian (same build, so their versions always match), and
#     Firefox ESR (driven over its own Marionette protocol: no geckodriver is needed), and the
#     fonts runs are drawn with as PNG (fonts-dejavu-core, fonts-liberation)
# Tools land in ~/.cargo/bin and $TOOLS (default .tools/) ; source scripts/ui-env.sh for PATH.
# --build-only skips the browsers (what `cargo xtask play` needs: building, not browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}

rustup target add wasm32-unknown-unknown >/dev/null

# The downloads first: `cargo xtask play` runs this while the server and the app compile, so
# what waits on the network overlaps their compiles rather than following trunk's.
if [ ! -x "$TOOLS/node_modules/.bin/wasm-opt" ] || [ ! -x "$TOOLS/node_modules/.bin/terser" ] \
  || [ ! -f "$TOOLS/node_modules/axe-core/axe.min.js" ]; then
  mkdir -p "$TOOLS"
  # terser minifies wasm-bindgen's JS glue in release builds (scripts/trunk-post-build.sh);
  # axe-core checks the pages' accessibility in the browser tests (users.rs).
  npm install --silent --no-audit --no-fund --prefix "$TOOLS" binaryen@132 terser@5 axe-core@4
fi

# zopfli compresses the bundle's .gz files, 4-5 % smaller than gzip -9 (the same format); the
# build falls back to gzip without it.
if ! command -v zopfli >/dev/null; then
  if [ "$(id -u)" = 0 ] && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zopfli >/dev/null; then
    :
  else
    echo "no zopfli (apt install zopfli): the bundle is compressed with gzip -9 instead" >&2
  fi
fi

# Both are compiled unoptimised (--debug) and without debug info: they run for seconds per
# build, mostly waiting on rustc and wasm-opt, and compile in a fraction of the time. Measured
# 5 Dec, trunk: 153 s (crates already downloaded; with debug info 178 s, side by side; optimised,
# an earlier day on a busier machine, 502 s); wasm-bindgen-cli about a minute.
export CARGO_PROFILE_DEV_DEBUG=0
if ! trunk --version 2>/dev/null | grep -q '0.21.14'; then
  # Without its default features (TLS for downloading tools, the update check): it downloads
  # nothing here (this script installs wasm-bindgen-cli and wasm-opt first on PATH).
  cargo install trunk --version 0.21.14 --locked --no-default-features --debug
fi

bindgen=$(cargo pkgid -p wasm-bindgen | sed 's/.*@//')
if ! wasm-bindgen --version 2>/dev/null | grep -q " $bindgen\$"; then
  # Not --locked: its lockfile pins a webpki-roots version the registry lacks. Only the
  # `wasm-bindgen` binary: trunk needs no test runner. Without TLS: it downloads nothing here.
  cargo install wasm-bindgen-cli --version "$bindgen" --debug --bin wasm-bindgen --no-default-features
fi

if [ "${1:-}" = "--build-only" ]; then
  exit 0
fi

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null || ! command -v firefox-esr >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    chromium chromium-driver firefox-esr fonts-liberation fonts-dejavu-core >/dev/null
fi
# The server draws runs as PNG with DejaVu or Liberation (server/src/web/png.rs; its tests).
if [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] \
  && [ ! -e /usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-dejavu-core >/dev/null
fi
