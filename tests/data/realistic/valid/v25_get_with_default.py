# .get() with a default on a field the shape lacks.
# result: {"wind": "calm", "has_temp": true}
w = everything_get_structured_content(location='Chicago')
wind = w.get('wind', 'calm')
result = {'wind': wind, 'has_temp': isinstance(w['temperature'], (int, float))}
