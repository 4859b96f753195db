#!/usr/bin/env bash
# The filtered read's tests (tests/integration/filtered-read.test.ts) and the bench's filtered section
# serve a vLLM-shaped registry with the real prometheus_client (tests/support/prom-vllm.py), Debian's
# python3-prometheus-client. Installs it when /usr/bin/python3 cannot import it; needs root, as on the
# project's machines and in CI.
set -euo pipefail
python="${STEPWATCH_PYTHON:-/usr/bin/python3}"
if "$python" -c 'import prometheus_client' >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "$python cannot import prometheus_client: install Debian's 'python3-prometheus-client' package (or set STEPWATCH_PYTHON)." >&2
  exit 1
fi
echo "Installing Debian's python3-prometheus-client for the filtered read's tests..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-prometheus-client >/dev/null
"$python" -c 'import prometheus_client' 
