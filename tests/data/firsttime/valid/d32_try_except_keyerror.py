# A guarded read of a missing key.
# result: "none"
w = everything_get_structured_content(location='Chicago')
try:
    x = w['wind']
except KeyError:
    x = 'none'
result = x
