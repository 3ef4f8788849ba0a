# Locations taken from a list of the allowed values.
# result: {"Chicago": true, "New York": true}
cities = ['Chicago', 'New York']
temps = {}
for c in cities:
    w = everything_get_structured_content(location=c)
    temps[c] = isinstance(w['temperature'], (int, float))
result = temps
