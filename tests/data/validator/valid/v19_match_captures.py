# match/case capture patterns bind names.
w = everything_get_structured_content(location="Los Angeles")
match dict(w):
    case {"temperature": memory_temp, **everything_rest}:
        result = (memory_temp, everything_rest)
    case [filesystem_first, *filesystem_more]:
        result = filesystem_first
    case other:
        result = other
