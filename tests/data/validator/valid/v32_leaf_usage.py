# Indexing and methods on leaf values.
c = filesystem_read_text_file(path="/tmp/notes.md")
first_char = c["content"][0]
lines = c["content"].splitlines()
upper = c.content.upper()
result = (first_char, len(lines), upper[:10])
