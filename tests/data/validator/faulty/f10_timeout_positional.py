# timeout_ms is keyword-only, passing it by position is too many.
# expect: filesystem_read_text_file takes 3 positional argument(s) but 4 were given (line 3).
text = filesystem_read_text_file("/tmp/notes.txt", None, 10, 5000)
print(text)
