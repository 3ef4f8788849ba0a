# Reading a file outside the allowed directory, then using its text.
# class: upstream_error
# expect: outside allowed directories
# expect: (line 9)
paths = ['todo.txt', '/etc/hostname']
out = []
for p in paths:
    r = filesystem_read_text_file(path=p)
    out.append(r['content'].strip())
result = out
