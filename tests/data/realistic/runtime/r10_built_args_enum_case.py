# Locations computed in lower case: the enum is off by case.
# class: arguments
# expect: 'Chicago'
cities = ['Chicago', 'New York']
temps = {}
for c in cities:
    w = everything_get_structured_content(location=c.lower())
    temps[c] = w['temperature']
result = temps
