#!/usr/bin/env bash
# The replica tests start a real PostgreSQL 15 themselves (tests/support/postgres.ts: initdb and
# pg_ctl as the postgres user, into a temporary folder). Installs Debian's postgresql-15 when its
# programs are missing; needs root, as on the project's machines and in CI.
set -euo pipefail
bin="${STEPWATCH_PG_BIN:-/usr/lib/postgresql/15/bin}"
if [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "PostgreSQL 15 missing at $bin: install Debian's 'postgresql-15' package (or set STEPWATCH_PG_BIN)." >&2
  exit 1
fi
echo "Installing Debian's postgresql-15 for the replica tests..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
# The package's own cluster is not wanted (the tests start their own).
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now postgresql >/dev/null 2>&1 || true; fi
"$bin/postgres" --version
