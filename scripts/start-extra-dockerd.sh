#!/usr/bin/env bash
# Starts (or finds running) a second, independent Docker engine named NAME with its own socket and data root,
# and imports the test image into it. Prints the DOCKER_HOST to use. Used by tests that need a host of
# their own (multi-host, GC isolation).
#   usage: scripts/start-extra-dockerd.sh NAME
source "$(dirname "$0")/lib.sh"
name="${1:?usage: start-extra-dockerd.sh NAME}"
[[ "$name" =~ ^[a-z0-9-]+$ ]] || die "NAME must be lowercase letters, digits and '-'"
run="/run/keeper-dockerd-$name"
sock="$run/docker.sock"
export DOCKER_HOST="unix://$sock"

if docker version >/dev/null 2>&1; then
  echo "$DOCKER_HOST"
  exit 0
fi
command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed; run scripts/provision-docker.sh first"
mkdir -p "$run" "/var/lib/keeper-dockerd-$name"
# A bridge of its own and no iptables changes, so that it never disturbs the main engine's networking.
nohup dockerd --host "$DOCKER_HOST" --data-root "/var/lib/keeper-dockerd-$name" --exec-root "$run/exec" \
  --pidfile "$run/docker.pid" --bridge none --iptables=false --ip-masq=false \
  >"$TOOLS_DIR/dockerd-$name.log" 2>&1 &
wait_for "docker version" 60 || { tail -20 "$TOOLS_DIR/dockerd-$name.log" >&2; die "dockerd $name did not answer within 60 s"; }
if ! docker image inspect keeper-test/busybox:latest >/dev/null 2>&1; then
  DOCKER_HOST= docker save keeper-test/busybox:latest | docker load >/dev/null || die "could not load the test image into $name"
fi
echo "$DOCKER_HOST"
