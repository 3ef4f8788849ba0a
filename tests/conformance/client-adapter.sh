#!/usr/bin/env bash
# client-adapter.sh — codemcp as "the client" of the MCP conformance suite's client scenarios.
#
#   conformance client --command tests/conformance/client-adapter.sh --scenario NAME
#
# The suite starts its test server, then runs this script with the server URL appended as the
# last argument and the scenario name in MCP_CONFORMANCE_SCENARIO. The script writes a temporary
# mcp.json with one remote upstream named "conf" at that URL and runs the real codemcp binary
# against it: a CODEMCP_DUMP run (initialize, tools/list) or a CODEMCP_SMOKE program that calls
# the scenario's tool through the generated SDK and asserts what the tool returned. The suite
# judges what codemcp sent; the exit status tells it whether codemcp itself was satisfied.
#
# Environment: CODEMCP_BIN (default <repo>/build/src/codemcp), CODEMCP_WRAPPER (command
# prefix, e.g. valgrind), CODEMCP_LOG (passed through; stderr ends up in the suite's
# stderr.txt). Exit: codemcp's status; 2 for a scenario this adapter does not cover (see
# tests/e2e/conformance_client.test.mjs for why those do not apply to codemcp).
set -u

url="${!#}"
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
if [ $# -lt 1 ] || ! [[ "$url" =~ ^https?://[A-Za-z0-9.:/_~%-]+$ ]]; then
    echo "client-adapter: expected the server URL as the last argument, got '${url:-}'" >&2
    exit 2
fi

# What codemcp runs for each scenario. The tool names and results are fixed by the suite's
# scenario servers (add_numbers answers "The sum of A and B is A+B"; test_reconnection's
# answer arrives on the resumed GET stream after the tools/call stream was closed early).
dump=0 program= oauth=0
case "$scenario" in
initialize)
    dump=1 # initialize + notifications/initialized + tools/list, nothing else
    ;;
tools_call)
    program='r = conf_add_numbers(a=1, b=2)
assert r == "The sum of 1 and 2 is 3", r
result = r'
    ;;
sse-retry)
    program='r = conf_test_reconnection()
assert r == "Reconnection test completed successfully", r
result = r'
    ;;
request-metadata | json-schema-ref-no-deref | json-schema-2020-12-preservation)
    dump=1 # the 2026 handshake (server/discover or the fallback) and tools/list
    ;;
http-standard-headers)
    program='result = conf_test_headers()'
    ;;
http-invalid-tool-headers)
    # Only valid_tool may be offered: the others carry invalid x-mcp-header annotations.
    program='import builtins
bad = [n for n in dir() if n.startswith("conf_invalid")]
assert not bad, bad
result = conf_valid_tool(region="us-west1")'
    ;;
http-custom-headers)
    # The calls the scenario asks for, with exactly its arguments (MCP_CONFORMANCE_CONTEXT).
    program=$(/usr/bin/python3 -c '
import json, os, sys
ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
lines = ["import json", "out = []"]
for c in ctx.get("toolCalls", []):
    lines.append("out.append(str(conf_%s(**json.loads(%r))))" % (c["name"], json.dumps(c.get("arguments", {}))))
lines.append("result = out")
print("\n".join(lines))') || exit 2
    ;;
sep-2322-client-request-state)
    # The two tools that need no answer from a person; echo_state and no_state ask for
    # elicitation, which a running program cannot give (ToolError kind "input_required").
    program='out = [str(conf_test_mrtr_no_result_type()), str(conf_test_mrtr_unrelated())]
for f in (conf_test_mrtr_echo_state, conf_test_mrtr_no_state):
    try:
        str(f())
        out.append("answered")
    except ToolError as e:
        out.append(e.kind)
assert out[2:] == ["input_required", "input_required"], out
result = out'
    ;;
auth/*)
    # OAuth: codemcp meets the 401, `codemcp auth conf` logs in (the "browser" follows the
    # authorization endpoint's redirect to codemcp's callback), codemcp runs again; a 403
    # step-up or a changed authorization server asks for another login (see the loop below).
    program='r = conf_test_tool()
result = str(r)'
    oauth=1
    ;;
*)
    echo "client-adapter: scenario '$scenario' does not apply to codemcp (see conformance_client.test.mjs)" >&2
    exit 2
    ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${CODEMCP_BIN:-$here/../../build/src/codemcp}"
if [ ! -x "$bin" ]; then
    echo "client-adapter: codemcp binary not found at $bin (set CODEMCP_BIN)" >&2
    exit 2
fi

home="$(mktemp -d "${TMPDIR:-/tmp}/codemcp-conf-client.XXXXXX")" || exit 2
trap 'rm -rf "$home"' EXIT
# The URL passed the character check above, so it needs no JSON escaping.
printf '{"mcp": {"conf": {"type": "remote", "url": "%s"}}}\n' "$url" >"$home/mcp.json"
if [ "$oauth" = 1 ]; then
    # The scenario's pre-registered client (MCP_CONFORMANCE_CONTEXT) becomes the "oauth"
    # block a user would write; basic-cimd's client id is the document URL the suite expects.
    /usr/bin/python3 - "$url" "$scenario" >"$home/mcp.json" <<'PY' || exit 2
import json, os, sys
url, scenario = sys.argv[1], sys.argv[2]
ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
oauth = {}
if ctx.get("client_id"):
    oauth["clientId"] = ctx["client_id"]
if ctx.get("client_secret"):
    oauth["client_secret"] = ctx["client_secret"]  # snake_case honoured too
if ctx.get("private_key_pem"):
    oauth["privateKey"] = ctx["private_key_pem"]
    oauth["signingAlgorithm"] = ctx.get("signing_algorithm", "ES256")
if scenario.startswith("auth/client-credentials"):
    oauth["grant"] = "client_credentials"
if scenario == "auth/basic-cimd":
    oauth["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
entry = {"type": "remote", "url": url}
if oauth:
    entry["oauth"] = oauth
print(json.dumps({"mcp": {"conf": entry}}))
PY
fi

# Isolated from the user's own configuration; nothing inherited selects another mode.
unset CODEMCP_DUMP CODEMCP_SMOKE CODEMCP_TRANSPORT
export CODEMCP_CONFIG="$home/mcp.json" XDG_CONFIG_HOME="$home"

# shellcheck disable=SC2206 # the wrapper is a command prefix split on blanks, as in lib.mjs
wrapper=(${CODEMCP_WRAPPER:-})
if [ "$oauth" = 1 ]; then
    export BROWSER="$here/follow-redirects.py"
    # Up to 4 runs: each run that leaves the server needs_auth (the first 401, a 403 step-up,
    # a changed authorization server) is followed by one `codemcp auth`; codemcp's own
    # step-up limit decides when to stop asking.
    for round in 1 2 3 4; do
        CODEMCP_SMOKE="$program" "${wrapper[@]}" "$bin" </dev/null >"$home/out.json"
        rc=$?
        if ! "$bin" auth --list | grep -q '^conf .*needs_auth'; then
            cat "$home/out.json"
            exit $rc
        fi
        echo "client-adapter: run $round left conf needing authorization: codemcp auth conf" >&2
        "${wrapper[@]}" "$bin" auth conf || exit 1
    done
    cat "$home/out.json"
    exit 1
elif [ "$dump" = 1 ]; then
    CODEMCP_DUMP=1 "${wrapper[@]}" "$bin" </dev/null
else
    CODEMCP_SMOKE="$program" "${wrapper[@]}" "$bin" </dev/null
fi
