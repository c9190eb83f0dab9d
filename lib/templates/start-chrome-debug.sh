#!/bin/bash
# Start Chrome with remote debugging enabled, for ss's Chrome DevTools fallback.
# Uses a separate profile to avoid conflicts with an existing Chrome: log into your services
# once in it, and the sessions persist across restarts. Arguments are passed on to Chrome.
# Written by ss (browser.cdp_port: {{cdp_port}}); ss rewrites it when the port changes.

PORT={{cdp_port}}
USER_DATA_DIR="$HOME/.super-sandbox/chrome-debug-profile"
mkdir -p "$USER_DATA_DIR"

if [ "$(uname -s)" = Darwin ]; then
    exec /Applications/Google\ Chrome.app/Contents/MacOS/Google\ Chrome \
        --remote-debugging-port="$PORT" \
        --user-data-dir="$USER_DATA_DIR" \
        "$@"
fi
for chrome in google-chrome google-chrome-stable chromium chromium-browser; do
    if command -v "$chrome" >/dev/null 2>&1; then
        exec "$chrome" \
            --remote-debugging-port="$PORT" \
            --remote-debugging-address=127.0.0.1 \
            --user-data-dir="$USER_DATA_DIR" \
            "$@"
    fi
done
echo "start-chrome-debug.sh: no Chrome found (google-chrome or chromium)" >&2
exit 69
