#!/usr/bin/env bash
# Validates Kubernetes manifests against the API's own schemas, strictly (unknown fields are
# errors), with kubernetes-validate from PyPI in a venv under .tools/ (installed once).
#   scripts/validate-manifests.sh install       installs it (idempotent)
#   scripts/validate-manifests.sh [FILE…]       validates FILE… (default: every deploy/kubernetes manifest)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}
VENV=$TOOLS/kube-venv
VERSION=1.37.0
# The Kubernetes version the manifests are written for (its schemas ship with the package).
KUBERNETES=1.33.0

if [ ! -x "$VENV/bin/kubernetes-validate" ] || ! "$VENV/bin/pip" show kubernetes-validate 2>/dev/null | grep -q "^Version: $VERSION\$"; then
  mkdir -p "$TOOLS"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$VERSION"
fi
[ "${1:-}" = install ] && exit 0
if [ $# -eq 0 ]; then
  mapfile -t files < <(find deploy/kubernetes -name '*.yaml' | sort)
  set -- "${files[@]}"
fi
exec "$VENV/bin/kubernetes-validate" --strict --kubernetes-version "$KUBERNETES" "$@"
