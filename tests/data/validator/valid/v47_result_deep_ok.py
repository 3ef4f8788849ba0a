# Correct deep accesses through every kind of step.
r = github_enterprise_search_issues(q="label:bug").result()
a = r["items"][0]["user"]["login"]
b = r.total_count
c = r["items"][-1]["labels"][0]["color"]
d = [i["title"] for i in r["items"][:3]]
g = memory_read_graph()
e = g.entities[0]["observations"][0]
f = g["relations"][0]["from"] + g["relations"][0]["to"]
result = (a, b, c, d, e, f)
