#!/usr/bin/env bash
# Install Debian's Chromium and its WebDriver for the Superset check, unless both are there.
#
# Usage: .ci/superset-chromium.sh     (as root; prints the chromium path)
#
# The check drives this Chromium headless through Selenium and /usr/bin/chromedriver, never a
# browser or driver that Selenium would download.
set -euo pipefail

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2
fi
command -v chromium
