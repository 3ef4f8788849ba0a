# An error result a program keeps as text: tested, joined, formatted, dumped and returned.
# result: {"text": "Entity with name Nobody not found", "line": "failed: Entity with name Nobody not found", "f": "<Entity with name Nobody not found>", "dumped": true, "has": true, "head": "Entity", "missing": null, "list": ["Entity with name Nobody not found"]}
import json
r = memory_add_observations(observations=[{'entityName': 'Nobody', 'contents': ['x']}])
if isinstance(r, dict):
    raise SystemExit('expected the error text')
line = 'failed: ' + r
result = {'text': r, 'line': line, 'f': f'<{r}>', 'dumped': json.loads(json.dumps({'e': r}))['e'] == r,
          'has': 'Nobody' in r, 'head': r[:6], 'missing': getattr(r, 'content', None), 'list': [r]}
