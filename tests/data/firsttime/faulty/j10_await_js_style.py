# await on a JS-style name.
# expect: Call `everything_echo(...)`
result = await mcp.everything.echo(message='hi')
