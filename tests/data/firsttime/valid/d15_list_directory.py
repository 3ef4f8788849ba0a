# list_directory parsed.
# result: ["notes.md", "todo.txt"]
r = filesystem_list_directory(path='.')
result = sorted(l.split(' ', 1)[1] for l in r['content'].splitlines())
