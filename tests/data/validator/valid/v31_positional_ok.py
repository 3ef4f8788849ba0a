# Positional arguments within the signature.
s = everything_get_sum(1, 2)
t = filesystem_read_text_file("/tmp/x", 5)
m = filesystem_move_file("/tmp/a", "/tmp/b")
e = everything_get_annotated_message("error", True)
result = (s, t, m, e)
