# Held out (written after the fixes): guarded content.
# result: 1.5
r = filesystem_read_text_file(path='todo.txt')
text = r['content'] if isinstance(r, dict) else r
lines = [l for l in text.splitlines() if l]
n = len(lines) / 2
result = n
