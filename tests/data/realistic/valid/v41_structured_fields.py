# Structured weather fields compared across cities.
# result: true
ws = {c: everything_get_structured_content(location=c) for c in ['Chicago', 'Los Angeles']}
keys = {c: sorted(w.keys()) for c, w in ws.items()}
result = keys['Chicago'] == keys['Los Angeles'] and 'humidity' in keys['Chicago']
