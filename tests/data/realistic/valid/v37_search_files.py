# Searching for markdown files, then reading their first lines.
# result: ["# A", "# B"]
found = filesystem_search_files(path='.', pattern='**/*.md')
paths = sorted(l.strip() for l in found['content'].splitlines() if l.strip().endswith('.md'))
heads = [filesystem_read_text_file(path=p, head=1)['content'].strip() for p in paths]
result = heads
