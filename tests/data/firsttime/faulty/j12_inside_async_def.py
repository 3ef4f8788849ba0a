# JS-style name inside an async helper.
# expect: `everything.echo` is not defined (line 5)
import asyncio
async def main():
    return await everything.echo(message='x')
result = asyncio.run(main())
