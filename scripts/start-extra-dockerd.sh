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
# A bridge and address pool of its own and no iptables changes, so that it never disturbs the main engine's
# networking. (`--bridge none` would make dockerd delete the main engine's docker0.)
slot=$(( $(printf '%s' "$name" | cksum | cut -d' ' -f1) % 30 ))
bridge="kd-$(printf '%s' "$name" | cut -c1-12)"
if ! ip link show "$bridge" >/dev/null 2>&1; then
  ip link add "$bridge" type bridge || die "cannot create bridge $bridge"
  ip addr add "10.$((200 + slot)).0.1/24" dev "$bridge"
  ip link set "$bridge" up
fi
nohup dockerd --host "$DOCKER_HOST" --data-root "/var/lib/keeper-dockerd-$name" --exec-root "$run/exec" \
  --pidfile "$run/docker.pid" --bridge "$bridge" --iptables=false --ip-masq=false \
  --default-address-pool "base=10.$((230 + slot % 20)).0.0/16,size=24" \
  >"$TOOLS_DIR/dockerd-$name.log" 2>&1 &
wait_for "docker version" 60 || { tail -20 "$TOOLS_DIR/dockerd-$name.log" >&2; die "dockerd $name did not answer within 60 s"; }
if ! docker image inspect keeper-test/busybox:latest >/dev/null 2>&1; then
  DOCKER_HOST= docker save keeper-test/busybox:latest | docker load >/dev/null || die "could not load the test image into $name"
fi
echo "$DOCKER_HOST"
