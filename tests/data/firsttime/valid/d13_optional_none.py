# None for an optional argument means not given.
# result: "# notes"
r = filesystem_read_text_file(path='notes.md', head=None, tail=None)
result = r['content'].splitlines()[0]
