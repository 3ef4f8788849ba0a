# Await a structured result and read it.
# result: ["conditions", "humidity", "temperature"]
w = await everything_get_structured_content(location='Chicago')
result = sorted(w.keys())
