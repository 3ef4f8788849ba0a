# mcp.<server>.<tool>.
# expect: `mcp.everything.echo` is not defined (line 4)
# expect: Call `everything_echo(...)`
result = mcp.everything.echo(message='hi')
