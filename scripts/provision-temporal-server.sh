#!/usr/bin/env bash
# Provides what the tests' real Temporal cluster needs (test/helpers/cluster):
#   .tools/bin/temporal-server and .tools/bin/temporal-sql-tool at v$VERSION, built from the Go module proxy,
#   the server module's schema files in the Go module cache, PostgreSQL's initdb/pg_ctl, and openssl.
# Cached binaries of the right version are kept, so a second run takes well under a second.
#
# It never starts, stops or configures a PostgreSQL cluster: the tests run clusters of their own with pg_ctl.
# If installing Debian's postgresql starts the machine's own cluster, that cluster is the machine's to keep.
source "$(dirname "$0")/lib.sh"
VERSION=1.29.1 # also TEMPORAL_SERVER_VERSION in test/helpers/cluster/facts.ts; test/compose.test.ts compares
PG_BIN=/usr/lib/postgresql/15/bin
MODULE=go.temporal.io/server

# `temporal-server --version` prints "temporal version 1.29.1"; the sql tool "temporal-sql-tool version 1.29.1".
has_version() { [ -x "$1" ] && [ "$("$1" --version 2>/dev/null | sed -n "s/^[a-z-]* version //p")" = "$VERSION" ]; }

build() {
  local name="$1" package="$2" log="$TOOLS_DIR/go-install-$1.log" start
  command -v go >/dev/null 2>&1 || die "go is required to build $name $VERSION"
  say "go install $package@v$VERSION (cold: minutes)"
  start=$(date +%s)
  # go install names the binary after its package directory (server, sql): build into a scratch GOBIN, then move.
  local gobin
  gobin=$(mktemp -d)
  CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS=-mod=mod go install "$package@v$VERSION" >"$log" 2>&1 \
    || { rm -rf "$gobin"; tail -20 "$log" >&2; die "go install $package@v$VERSION failed (log: $log)"; }
  mv "$gobin/$(basename "$package")" "$TOOLS_DIR/bin/$name"
  rm -rf "$gobin"
  has_version "$TOOLS_DIR/bin/$name" || die "$TOOLS_DIR/bin/$name does not report version $VERSION"
  say "built $name $VERSION in $(( $(date +%s) - start )) s"
}

provide_binary() {
  local name="$1" package="$2"
  if has_version "$TOOLS_DIR/bin/$name"; then
    say "cached: $name $VERSION"
  else
    build "$name" "$package"
  fi
}

# The cluster helper reads the PostgreSQL schema files from the server module's directory in the module cache.
provide_schema() {
  local modcache dir
  modcache=$(go env GOMODCACHE 2>/dev/null || echo "${GOMODCACHE:-$HOME/go/pkg/mod}")
  dir="$modcache/$MODULE@v$VERSION/schema/postgresql/v12"
  if [ ! -d "$dir/temporal/versioned" ] || [ ! -d "$dir/visibility/versioned" ]; then
    command -v go >/dev/null 2>&1 || die "go is required to download the schema files of $MODULE@v$VERSION"
    say "go mod download $MODULE@v$VERSION (schema files)"
    GOFLAGS=-mod=mod go mod download "$MODULE@v$VERSION" || die "cannot download $MODULE@v$VERSION"
  fi
  [ -d "$dir/temporal/versioned" ] || die "no PostgreSQL schema at $dir"
}

provide_binary temporal-server "$MODULE/cmd/server"
provide_binary temporal-sql-tool "$MODULE/cmd/tools/sql"
provide_schema
[ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] || apt_install postgresql
[ -x "$PG_BIN/initdb" ] || die "$PG_BIN/initdb is missing after installing postgresql (is it not version 15?)"
id postgres >/dev/null 2>&1 || die "the postgres user is missing (it comes with Debian's postgresql-common)"
command -v openssl >/dev/null 2>&1 || apt_install openssl
say "PostgreSQL $("$PG_BIN/initdb" --version | awk '{print $3}'), $(openssl version | cut -d' ' -f1-2)"
