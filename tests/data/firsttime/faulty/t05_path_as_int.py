# A path that is a number.
# expect: `path` must be string (str), got int 123
result = filesystem_read_text_file(path=123)
