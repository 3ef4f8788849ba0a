# A dry-run edit with True.
# result: true
text = filesystem_read_text_file(path='todo.txt')['content']
first = text.splitlines()[0]
r = filesystem_edit_file(path='todo.txt', edits=[{'oldText': first, 'newText': first.upper()}], dryRun=True)
result = '+A' in r['content']
