# Source me: puts the app's build tools on PATH (see install-ui-tools.sh).
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:${TOOLS:-$PWD/.tools}/node_modules/.bin:$PATH"
