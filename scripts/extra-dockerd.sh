#!/usr/bin/env bash
# Extra Docker engines for tests and benchmarks, each in a network namespace of its own.
#
#   extra-dockerd.sh start NAME [DAEMON_JSON]   start (or find running) engine NAME; prints its DOCKER_HOST
#   extra-dockerd.sh stop NAME                  stop it and remove its namespace, data root and run dir
#   extra-dockerd.sh stop-owned OWNER           stop every engine started with KEEPER_ENGINE_OWNER=OWNER
#   extra-dockerd.sh list                       the engines this script started, one line each
#
# Why a namespace: an engine started in the host's namespace shares its interfaces, routes and iptables. One
# with a host bridge of its own deletes the host's docker0 when it restarts over its data root (seen on these
# machines), which breaks every `docker run` on the main engine. Inside its namespace an engine has its own
# docker0, routes and iptables, and can touch none of the host's. Its socket stays on the host's filesystem.
#
# `nsenter --net`, not `ip netns exec`: the latter remounts /sys, which hides the cgroup v1 mounts, and dockerd
# then fails with "Devices cgroup isn't mounted".
source "$(dirname "$0")/lib.sh"

usage() { die "usage: extra-dockerd.sh start NAME [DAEMON_JSON] | stop NAME | stop-owned OWNER | list"; }
valid_name() { [[ "$1" =~ ^[a-z0-9-]{1,40}$ ]] || die "NAME must be 1-40 lowercase letters, digits and '-', got \"$1\""; }

# Every path and name of engine $1, in one place.
paths() {
  netns="keeper-$1"
  run="/run/keeper-dockerd-$1"
  data="/var/lib/keeper-dockerd-$1"
  sock="$run/docker.sock"
  pidfile="$run/docker.pid"
  marker="$run/keeper-engine"
  log="$TOOLS_DIR/dockerd-$1.log"
}

answers() { DOCKER_HOST="unix://$sock" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start() {
  local name="$1" config="${2:-}"
  valid_name "$name"; paths "$name"
  if answers; then echo "unix://$sock"; return 0; fi
  command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed; run scripts/provision-docker.sh first"
  [ -z "$config" ] || [ -f "$config" ] || die "daemon config $config does not exist"
  # A dockerd still shutting down holds the pidfile and the data root: let it finish first.
  local old
  old=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$old" ] && kill -0 "$old" 2>/dev/null; then
    wait_for "! kill -0 $old" 30 || die "dockerd $name (pid $old) neither answers nor exits"
  fi
  if [ ! -e "/run/netns/$netns" ]; then
    ip netns add "$netns" || die "cannot create network namespace $netns"
  fi
  ip -n "$netns" link set lo up
  mkdir -p "$run" "$data"
  printf 'owner=%s\nstarted=%s\n' "${KEEPER_ENGINE_OWNER:-manual}" "$(date +%s)" >"$marker"
  local extra=()
  [ -n "$config" ] && extra+=(--config-file "$config")
  nohup nsenter --net="/run/netns/$netns" dockerd --host "unix://$sock" --data-root "$data" \
    --exec-root "$run/exec" --pidfile "$pidfile" "${extra[@]}" >>"$log" 2>&1 &
  wait_for answers 60 || { tail -20 "$log" >&2; die "dockerd $name did not answer within 60 s (log: $log)"; }
  if ! DOCKER_HOST="unix://$sock" docker image inspect keeper-test/busybox:latest >/dev/null 2>&1; then
    DOCKER_HOST= docker save keeper-test/busybox:latest keeper-test/web:latest keeper-test/crashloop:latest \
      | DOCKER_HOST="unix://$sock" docker load >/dev/null || die "could not load the test images into $name"
  fi
  echo "unix://$sock"
}

# Processes that belong to the engine: dockerd itself, then its containerd, shims and runtimes (runsc's gofer
# and sandbox outlive a failed start), all found by the run directory in their command line.
engine_pids() { pgrep -f -- "$run/" || true; }

stop() {
  local name="$1"
  valid_name "$name"; paths "$name"
  local pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    wait_for "! kill -0 $pid" 30 || kill -KILL "$pid" 2>/dev/null || true
  fi
  local left
  left=$(engine_pids)
  if [ -n "$left" ]; then
    kill -KILL $left 2>/dev/null || true
    wait_for '[ -z "$(engine_pids)" ]' 10 || die "processes of engine $name survive SIGKILL: $(engine_pids | tr '\n' ' ')"
  fi
  # Overlay and shm mounts are made in the host's mount namespace: unmount them, deepest first, before removal.
  local mounts
  mounts=$(awk -v a="$data" -v b="$run" '$2 ~ "^"a || $2 ~ "^"b {print $2}' /proc/mounts | sort -r)
  for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m"; done
  rm -rf "$data" "$run"
  if [ -e "/run/netns/$netns" ]; then ip netns del "$netns" || die "cannot delete network namespace $netns"; fi
}

list() {
  local marker_file name
  for marker_file in /run/keeper-dockerd-*/keeper-engine; do
    [ -f "$marker_file" ] || continue
    name=$(basename "$(dirname "$marker_file")"); name=${name#keeper-dockerd-}
    printf '%s %s\n' "$name" "$(grep '^owner=' "$marker_file" | cut -d= -f2)"
  done
}

# The owner's engines stop side by side (each takes ~3 s, most of it waiting on its dockerd); every one is tried,
# and the exit code says whether any could not be stopped.
stop_owned() {
  local owner="$1" name who pid failed=0 stopping=()
  while read -r name who; do
    if [ "$who" = "$owner" ]; then
      stop "$name" &
      stopping+=($!)
    fi
  done < <(list)
  for pid in "${stopping[@]}"; do wait "$pid" || failed=1; done
  return "$failed"
}

case "${1:-}" in
  start) [ $# -ge 2 ] || usage; start "$2" "${3:-}" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  stop-owned) [ $# -eq 2 ] || usage; stop_owned "$2" ;;
  list) list ;;
  *) usage ;;
esac
