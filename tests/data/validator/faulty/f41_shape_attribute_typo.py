# Attribute typo on a structured result.
# expect: everything_get_structured_content: result has no field `humidty` (line 4). Did you mean `humidity`?
w = everything_get_structured_content(location="New York")
result = {"h": w.humidty, "t": w.temperature}
