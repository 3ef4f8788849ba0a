# Attribute access on a result reads keys too.
# expect: github_enterprise_search_issues: result has no field `total_cont` (line 4). Did you mean `total_count`?
found = github_enterprise_search_issues(q="repo:x/y")
print("total:", found.total_cont)
