# One positional given, the other required one missing.
# expect: filesystem_move_file: missing required argument(s) `destination` (line 3).
filesystem_move_file("/tmp/a.txt")
