# asyncio.run(main()) with await on SDK calls.
# result: "The sum of 1 and 1 is 2."
import asyncio
async def main():
    a = await everything_get_sum(a=1, b=1)
    return a
result = asyncio.run(main())
