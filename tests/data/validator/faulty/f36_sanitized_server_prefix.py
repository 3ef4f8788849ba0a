# A server name with a hyphen becomes an underscore prefix.
# expect: `github_enterprise_serch_issues` is not a known SDK function (line 3). Did you mean `github_enterprise_search_issues`?
res = github_enterprise_serch_issues(q="bug")
result = res
