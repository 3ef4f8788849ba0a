# **extra does not accept extra positional arguments.
# expect: github_enterprise_search_issues takes 2 positional argument(s) but 3 were given (line 3).
res = github_enterprise_search_issues("bug", 10, "desc")
result = res
