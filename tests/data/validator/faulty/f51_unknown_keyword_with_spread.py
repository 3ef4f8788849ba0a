# An explicit unknown keyword is wrong even next to a **spread.
# expect: unknown argument `lcoation` for everything_get_structured_content (line 4). Did you mean `location`?
opts = {"timeout_ms": 1000}
w = everything_get_structured_content(lcoation="Chicago", **opts)
