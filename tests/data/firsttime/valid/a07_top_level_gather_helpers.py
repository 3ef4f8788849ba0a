# Top-level await of helpers.
# result: 12
import asyncio
async def total(a, b):
    s = await everything_get_sum(a=a, b=b)
    return int(s.rsplit(' ', 1)[1].rstrip('.'))
vals = await asyncio.gather(*[total(i, i) for i in range(4)])
result = sum(vals)
