# The same variable name bound in two places is not tracked.
def count(r):
    return len(r["whatever_the_caller_passes"])

r = memory_read_graph()
result = count({"whatever_the_caller_passes": r["entities"]})
