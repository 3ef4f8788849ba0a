# A call inside a lambda.
# expect: unknown argument `pth` for filesystem_read_text_file (line 3). Did you mean `path`?
read = lambda p: filesystem_read_text_file(pth=p)
texts = list(map(read, ["/tmp/a", "/tmp/b"]))
result = len(texts)
