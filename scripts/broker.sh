#!/usr/bin/env bash
# The Kafka-compatible broker the tests use (TOOLCHAIN.md, "Broker"): noida-db's Kafka service,
# from PyPI, in a venv under .tools/. docker-compose.yml keeps a real Apache Kafka for users.
#   scripts/broker.sh install          installs it (idempotent)
#   scripts/broker.sh start <port>     starts it on 127.0.0.1:<port> with a fresh data dir, waits
#                                      until it accepts connections, prints its pid
#   scripts/broker.sh stop <port>      stops the one started on <port>
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}
VENV=$TOOLS/broker-venv
VERSION=0.2.3

binary() {
  "$VENV/bin/python" -c 'import noida_db, os; print(os.path.join(os.path.dirname(noida_db.__file__), "noida-db"))'
}

case "${1:-}" in
  install)
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/pip" show noida-db 2>/dev/null | grep -q "^Version: $VERSION\$"; then
      mkdir -p "$TOOLS"
      python3 -m venv "$VENV"
      "$VENV/bin/pip" install --quiet --disable-pip-version-check "noida-db==$VERSION"
    fi
    ;;
  start)
    port=${2:?usage: broker.sh start <port>}
    dir=$TOOLS/broker-$port
    rm -rf "$dir" && mkdir -p "$dir/data"
    # The binary itself (not the console-script wrapper), so the pid is the broker's.
    # Its GLIBC_2.39 warning on this Debian is harmless (TOOLCHAIN.md).
    "$(binary)" start --only kafka --host 127.0.0.1 --kafka-port "$port" --data-dir "$dir/data" \
      >"$dir/log" 2>&1 &
    echo $! >"$dir/pid"
    for _ in $(seq 1 300); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        cat "$dir/pid"
        exit 0
      fi
      if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "the broker exited; its log:" >&2
        cat "$dir/log" >&2
        exit 1
      fi
      sleep 0.1
    done
    echo "the broker did not accept connections on port $port within 30 s" >&2
    exit 1
    ;;
  stop)
    port=${2:?usage: broker.sh stop <port>}
    dir=$TOOLS/broker-$port
    if [ -f "$dir/pid" ]; then
      kill "$(cat "$dir/pid")" 2>/dev/null || true
      rm -f "$dir/pid"
    fi
    ;;
  *)
    echo "usage: scripts/broker.sh install | start <port> | stop <port>" >&2
    exit 2
    ;;
esac
