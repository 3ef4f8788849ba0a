# **extra accepts unknown keywords but the required one is still required.
# expect: github_enterprise_search_issues: missing required argument(s) `q` (line 3).
res = github_enterprise_search_issues(per_page=5, sort="updated")
result = res
