#!/usr/bin/env bash
# Makes sure a Docker engine answers on DOCKER_HOST (default: the local socket).
# If none does and we are root with apt, installs Debian's docker.io and starts dockerd in the background.
source "$(dirname "$0")/lib.sh"

engine_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if engine_answers; then
  say "Docker engine $(docker version --format '{{.Server.Version}}') answers"
  exit 0
fi
if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST}" != "unix:///var/run/docker.sock" ]; then
  die "no Docker engine answers on DOCKER_HOST=$DOCKER_HOST; start it or unset DOCKER_HOST"
fi

command -v dockerd >/dev/null 2>&1 || apt_install docker.io
command -v iptables >/dev/null 2>&1 || apt_install iptables

say "starting dockerd (log: $TOOLS_DIR/dockerd.log)"
nohup dockerd >"$TOOLS_DIR/dockerd.log" 2>&1 &
wait_for engine_answers 60 || { tail -20 "$TOOLS_DIR/dockerd.log" >&2; die "dockerd did not answer within 60 s"; }
say "Docker engine $(docker version --format '{{.Server.Version}}') is up"
