# global/nonlocal declarations bind names.
def setup():
    global memory_counter
    memory_counter = 0

def outer():
    everything_total = 0
    def inner():
        nonlocal everything_total
        everything_total += 1
        return everything_total
    return inner()

setup()
result = (outer(), memory_counter)
