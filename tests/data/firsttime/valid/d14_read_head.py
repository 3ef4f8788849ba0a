# head= as a number.
# result: ["# notes", "hello"]
r = filesystem_read_text_file(path='notes.md', head=2)
result = r['content'].splitlines()
