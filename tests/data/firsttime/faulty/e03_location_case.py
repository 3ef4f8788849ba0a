# Right city, wrong case.
# expect: got 'chicago'. Did you mean 'Chicago'?
w = everything_get_structured_content(location='chicago')
result = w['temperature']
