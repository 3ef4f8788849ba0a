# .result() then fields.
# result: true
w = everything_get_structured_content(location='New York').result()
result = type(w['temperature']).__name__ in ('int', 'float')
