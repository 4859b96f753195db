#!/usr/bin/env bash
# The export's tests run Debian's real promtool (check metrics / check rules / test rules) and a real
# Prometheus that scrapes the app. Installs Debian's `prometheus` package when promtool is missing;
# needs root, as on the project's machines and in CI.
set -euo pipefail
promtool="${PROMTOOL_PATH:-/usr/bin/promtool}"
prometheus="${PROMETHEUS_PATH:-/usr/bin/prometheus}"
if [ -x "$promtool" ] && [ -x "$prometheus" ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "promtool/prometheus missing at $promtool / $prometheus: install Debian's 'prometheus' package (or set PROMTOOL_PATH and PROMETHEUS_PATH)." >&2
  exit 1
fi
echo "Installing Debian's prometheus (promtool) for the export's tests..."
apt-get update -qq
# --no-install-recommends: the server and promtool, without the recommended node exporter.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package's service is not wanted on a CI machine (the tests start their own Prometheus).
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
"$promtool" --version | head -1
