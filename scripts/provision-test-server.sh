#!/usr/bin/env bash
# Fetches Temporal's Java time-skipping test server (io.temporal:temporal-test-server) with its runtime
# dependencies from Maven Central into .tools/test-server-lib, and writes the wrapper .tools/bin/temporal-test-server.
source "$(dirname "$0")/lib.sh"
VERSION="${KEEPER_TEST_SERVER_VERSION:-1.38.0}"
LIB="$TOOLS_DIR/test-server-lib"
WRAPPER="$TOOLS_DIR/bin/temporal-test-server"

if [ -x "$WRAPPER" ] && [ -f "$LIB/.version-$VERSION" ]; then
  say "cached: temporal-test-server $VERSION"
  exit 0
fi
command -v java >/dev/null 2>&1 || die "java is required for the time-skipping test server"
command -v mvn >/dev/null 2>&1 || die "mvn is required to fetch the time-skipping test server"

pom_dir=$(mktemp -d)
trap 'rm -rf "$pom_dir"' EXIT
cat >"$pom_dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>keeper</groupId><artifactId>test-server-deps</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>2.0.16</version></dependency>
  </dependencies>
</project>
POM
say "mvn dependency:copy-dependencies io.temporal:temporal-test-server:$VERSION"
rm -rf "$LIB" && mkdir -p "$LIB"
mvn -q -B -f "$pom_dir/pom.xml" dependency:copy-dependencies \
  -DoutputDirectory="$LIB" -DincludeScope=runtime >"$TOOLS_DIR/mvn.log" 2>&1 \
  || { tail -20 "$TOOLS_DIR/mvn.log" >&2; die "Maven could not fetch temporal-test-server $VERSION"; }
touch "$LIB/.version-$VERSION"

cat >"$WRAPPER" <<'SH'
#!/bin/sh
# Called by the Temporal SDK as: temporal-test-server <port> [--enable-time-skipping].
# exec, so that the SDK's SIGKILL reaches the JVM itself.
LIB="$(cd "$(dirname "$0")/.." && pwd)/test-server-lib"
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -cp "$LIB/*" io.temporal.testserver.TestServer "$@"
SH
chmod +x "$WRAPPER"
say "temporal-test-server $VERSION ready ($(ls "$LIB" | wc -l) jars)"
