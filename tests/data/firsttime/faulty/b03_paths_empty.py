# An empty list where one item is needed.
# expect: `paths` needs at least 1 item(s), got 0
result = filesystem_read_multiple_files(paths=[])
