#!/usr/bin/env bash
# Makes sure a Docker engine answers on DOCKER_HOST (default: the local socket).
#
# If none does and we are root with apt, installs Debian's docker.io and starts dockerd in the background: keeper's
# own engine, with its pid in .tools/dockerd.pid and its daemon.json in .tools/dockerd.json, which registers gVisor's
# runsc where this machine can run it (scripts/provision-gvisor.sh). An engine that keeper's provisioning did not
# start is used as it is: keeper never changes an operator's engine.
source "$(dirname "$0")/lib.sh"
here="$(dirname "$0")"
CONFIG="$TOOLS_DIR/dockerd.json"
PIDFILE="$TOOLS_DIR/dockerd.pid"

engine_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
own_engine_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && echo "$pid"
}

if engine_answers; then
  if pid=$(own_engine_pid) && [ ! -s "$CONFIG" ]; then
    # keeper's engine from before gVisor was registered: write its config and reload it (runtimes reload on SIGHUP).
    bash "$here/provision-gvisor.sh" config "$CONFIG"
    say "keeper's engine (pid $pid) reloads $CONFIG"
    kill -HUP "$pid"
  fi
  say "Docker engine $(docker version --format '{{.Server.Version}}') answers"
  exit 0
fi
if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST}" != "unix:///var/run/docker.sock" ]; then
  die "no Docker engine answers on DOCKER_HOST=$DOCKER_HOST; start it or unset DOCKER_HOST"
fi

command -v dockerd >/dev/null 2>&1 || apt_install docker.io
command -v iptables >/dev/null 2>&1 || apt_install iptables
bash "$here/provision-gvisor.sh" config "$CONFIG"

say "starting dockerd (log: $TOOLS_DIR/dockerd.log)"
nohup dockerd --config-file "$CONFIG" >"$TOOLS_DIR/dockerd.log" 2>&1 &
echo $! >"$PIDFILE"
wait_for engine_answers 60 || { tail -20 "$TOOLS_DIR/dockerd.log" >&2; die "dockerd did not answer within 60 s"; }
say "Docker engine $(docker version --format '{{.Server.Version}}') is up"
