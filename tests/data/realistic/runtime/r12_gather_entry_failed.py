# A gather entry whose tool answered with an error, read as a value.
# class: async
# expect: filesystem_read_text_file
# expect: ENOENT
outs = gather([filesystem_read_text_file(path=p) for p in ['todo.txt', 'nope.txt']])
lines = {}
for i, o in enumerate(outs):
    lines[i] = len(o['value']['content'].splitlines())
result = lines
