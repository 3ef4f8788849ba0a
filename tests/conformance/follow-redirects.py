#!/usr/bin/python3
"""A headless "browser" for OAuth tests: GETs the URL it is given and follows redirects (the
authorization endpoint's 302 to codemcp's 127.0.0.1 callback), like a person clicking
"Allow". Used as $BROWSER by client-adapter.sh and the e2e OAuth tests."""
import sys
import urllib.request

try:
    with urllib.request.urlopen(sys.argv[1], timeout=30) as r:
        r.read()
except Exception as e:  # the callback page or the server's error page; codemcp judges
    print(f"follow-redirects: {e}", file=sys.stderr)
