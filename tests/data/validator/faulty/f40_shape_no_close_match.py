# No close match: the report lists the fields.
# expect: everything_get_structured_content: result has no field `temp` (line 4). Fields: conditions, humidity, temperature.
w = everything_get_structured_content(location="Chicago")
print(w["temp"])
