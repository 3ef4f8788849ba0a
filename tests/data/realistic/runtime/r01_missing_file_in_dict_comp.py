# Reading notes, one of which does not exist: the server's own error must reach the model.
# class: upstream_error
# expect: filesystem_read_text_file
# expect: ENOENT
# expect: (line 7)
names = ['a.md', 'missing.md']
notes = {n: filesystem_read_text_file(path='notes/' + n)['content'] for n in names}
result = {n: len(t.splitlines()) for n, t in notes.items()}
