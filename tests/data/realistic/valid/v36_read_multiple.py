# Reading several files at once and counting lines.
# result: {"has_alpha": true, "has_beta": true}
r = filesystem_read_multiple_files(paths=['notes/a.md', 'notes/b.md'])
text = r['content']
result = {'has_alpha': 'alpha' in text, 'has_beta': 'beta' in text}
