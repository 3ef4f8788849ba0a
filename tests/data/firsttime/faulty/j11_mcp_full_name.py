# mcp.<sdk name>.
# expect: Call `everything_get_sum(...)` directly
result = mcp.everything_get_sum(a=1, b=2)
