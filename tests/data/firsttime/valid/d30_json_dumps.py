# json.dumps of a result.
# result: ["conditions", "humidity", "temperature"]
import json
w = everything_get_structured_content(location='Chicago')
result = sorted(json.loads(json.dumps(w)))
