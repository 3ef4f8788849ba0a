# Listing the notes folder, then reading each note.
# result: {"a.md": "# A", "b.md": "# B"}
listing = filesystem_list_directory(path='notes')
names = sorted(l.split()[-1] for l in listing['content'].splitlines() if l.endswith('.md'))
texts = {n: filesystem_read_text_file(path='notes/' + n)['content'].splitlines()[0] for n in names}
result = texts
