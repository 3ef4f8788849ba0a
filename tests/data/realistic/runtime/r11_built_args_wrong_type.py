# Observations built as a string instead of a list.
# class: arguments
# expect: observations
# expect: list
facts = {'Ann': 'speaks German', 'Bob': 'speaks French'}
adds = [{'entityName': n, 'contents': f} for n, f in facts.items()]
r = memory_add_observations(observations=adds)
result = [x['entityName'] for x in r['results']]
