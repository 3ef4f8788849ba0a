# timeout_ms is accepted by every SDK function.
g = memory_read_graph(timeout_ms=1000)
s = everything_get_sum(1, 2, timeout_ms=500)
d = filesystem_list_allowed_directories(timeout_ms=None)
t = filesystem_read_text_file("/tmp/a", 10, None, timeout_ms=250)
result = (g, s, d, t)
