# Top-level await on an SDK call.
# result: "Echo: hi"
r = await everything_echo(message='hi')
result = r
