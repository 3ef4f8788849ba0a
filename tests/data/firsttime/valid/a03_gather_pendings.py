# asyncio.gather of Pendings at top level.
# result: ["Echo: a", "Echo: b"]
import asyncio
rs = await asyncio.gather(everything_echo(message='a'), everything_echo(message='b'))
result = list(rs)
