#!/usr/bin/env bash
# The end-to-end tests drive Debian's Chromium (Playwright cannot download its own build here).
# Installs it when missing; needs root, as on the project's machines and in CI.
set -euo pipefail
bin="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$bin" ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "Chromium is missing at $bin: install Debian's 'chromium' package (or set CHROMIUM_PATH)." >&2
  exit 1
fi
echo "Installing Debian's chromium for the end-to-end tests..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
"$bin" --version
