# A variable rebound to something else is not tracked.
r = everything_get_structured_content(location="Chicago")
r = {"city": "Chicago", "reading": r}
print(r["city"], r["reading"]["temperature"])
