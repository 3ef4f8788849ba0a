# Parsing a CSV file and summing a column.
# result: {"total": 8, "best": "bob"}
import csv, io
text = filesystem_read_text_file(path='data.csv')['content']
rows = list(csv.DictReader(io.StringIO(text)))
scores = {r['name']: int(r['score']) for r in rows}
result = {'total': sum(scores.values()), 'best': max(scores, key=scores.get)}
