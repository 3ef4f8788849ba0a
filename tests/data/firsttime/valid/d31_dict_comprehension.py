# Dict comprehension over results.
# result: ["Chicago", "New York"]
cities = ['Chicago', 'New York']
ws = {c: everything_get_structured_content(location=c) for c in cities}
result = sorted(k for k, w in ws.items() if 'temperature' in w)
